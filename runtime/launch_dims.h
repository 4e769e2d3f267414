// GPU launch dimensions: KernelSource's global_size / local_size are index expressions over the
// kernel's variables; a launch evaluates them with the bound values.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "codegen/codegen.h"

namespace ugrad {

/// Evaluates an index expression (CONST, variable PARAMs, integer ALU ops, CAST) with the
/// variables `vars` bound to `values` (same order). Error naming `what` and the node otherwise.
int64_t eval_index_expr(const UOp& expr, std::span<const UOp> vars, std::span<const int64_t> values,
                        std::string_view what);

/// A launch's grid (workgroups) and block (work-items per workgroup), three dimensions each.
struct LaunchDims {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
};

/// The launch dims of `src` for the variable values `values` (in `src.vars` order). Missing
/// dimensions are 1. Error naming the kernel for more than 3 dimensions, a dimension < 1 or beyond
/// 32 bits, or a workgroup of more than `max_workgroup_size` work-items.
LaunchDims eval_launch_dims(const KernelSource& src, std::span<const int64_t> values,
                            uint32_t max_workgroup_size = 1024);

}  // namespace ugrad
