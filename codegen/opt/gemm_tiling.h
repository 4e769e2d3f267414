// Register tiling for GEMM-shaped kernels: a REDUCE(ADD) of a MUL of two loads, each load
// independent of one of two output axes.
#pragma once
#include <optional>
#include <vector>

#include "codegen/opt/opt.h"

namespace ugrad {

/// Upcasts of the two output axes (a tile of accumulators in registers) and an unroll of the
/// reduce axis, or nullopt when `ast` is not GEMM-shaped or its extents do not divide.
std::optional<std::vector<Opt>> gemm_tiling_opts(const UOp& ast, const CodegenTarget& target);

}  // namespace ugrad
