// The scheduler: a tensor graph -> an ordered list of kernels, in two stages. First it decides
// which nodes get a buffer: a root, a CONTIGUOUS, an ASSIGN, a COPY and its source, a reduce whose
// result is broadcast into a larger loop nest or read inside another reduce's loop, and a node
// holding a reduce that one kernel needs in two index contexts. Then it builds one kernel per
// buffer: movement ops become index arithmetic over loop ranges (no views), every other node is
// computed inside its consumer's loops (fusion).
#pragma once
#include <string>
#include <vector>

#include "uop/shape.h"

namespace ugrad {

/// One kernel: its AST (see codegen/codegen.h for the form) and the BUFFER node of each slot
/// (slot 0 is the output). Or a copy between devices: `ast` is COPY(PARAM slot 1) (its arg the
/// destination device), buffers are {destination, source}.
struct ScheduleItem {
  UOp ast;
  std::vector<UOp> buffers;
  bool is_copy() const { return ast.op() == Op::COPY; }
};

struct Schedule {
  std::vector<ScheduleItem> items;  // in dependency order
  std::vector<UOp> outputs;         // per root: its realized node (a view of a BUFFER)
};

/// Schedules the roots. Roots that are already realized views cost no kernel.
Schedule create_schedule(const std::vector<UOp>& roots);

/// Values of variables by name, as the runtime passes them to kernels.
using VarVals = std::vector<std::pair<std::string, int64_t>>;

/// Variables (docs/design.md#variables). A variable is a 0-d PARAM with a name and a range; bound,
/// its value is stored into it inside the graph: AFTER(var, STORE(var, value)). A bound variable
/// has its variable's range (vmin/vmax), so shapes over it keep their maximum; realize strips the
/// binding before scheduling and passes the value to the kernels, so one schedule and one program
/// serve every value, and the JIT takes bound variables as inputs.
UOp bind_variable(const UOp& var, int64_t value);
/// True for AFTER(var, STORE(var, value)).
bool is_bound_variable(const UOp& u);
/// A bound variable's (plain variable, value).
std::pair<UOp, int64_t> unbind_variable(const UOp& bound);
/// The graph with every bound variable replaced by the plain one, and the bound values. Two
/// different values for one variable are an Error.
std::pair<std::vector<UOp>, VarVals> unbind_variables(const std::vector<UOp>& roots);
/// The inverse: every plain variable of `node` that `vals` names, bound to its value.
UOp rebind_variables(const UOp& node, const VarVals& vals);
/// `node` with every bound variable replaced by its value and index expressions that became
/// constant folded: a shape over bound variables becomes static.
UOp substitute_bound_values(const UOp& node);

/// The realized view of `buffer` with `shape`: RESHAPE to the maximum dims, then SHRINK to the
/// symbolic ones where they differ.
UOp buffer_view(const UOp& buffer, const Shape& shape);
/// True when the node is exactly buffer_view(buffer, its shape): realized, contiguous, no kernel
/// needed to read it.
bool is_realized_view(const UOp& node);

}  // namespace ugrad
