// The LLVM IR renderer: walks a linear program once and prints a complete LLVM module. One base
// for every target; the target record selects the small differences (entry calling convention,
// address space of buffer pointers, core_id/n_cores on the CPU), and the target's hooks
// (target_hooks.h: AMDGPU, x86) render the instructions only it has.
#pragma once
#include <string>
#include <vector>

#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// The parameters of a kernel in signature order.
struct KernelSignature {
  std::vector<UOp> buffers;  // buffer PARAMs by slot
  std::vector<UOp> vars;     // variable PARAMs, sorted by name
};

/// LLVM IR text of `program` (from linearize) as function `name`, in the module kernel_entry.h
/// describes (the CPU and GPU entries; `local_threads`: the GPU flat work-group size).
std::string render_llvm(const std::vector<UOp>& program, const KernelSignature& sig,
                        const CodegenTarget& target, const std::string& name,
                        int64_t local_threads = 1);

}  // namespace ugrad
