// CPU optimizations for dot-product kernels: reduces over one axis along which the loads are
// contiguous (a matvec, a matmul against a row-major (out, in) weight, a matmul that dequantizes
// its weight inside the reduce). The lanes of a vector run along the reduce axis:
//   UNROLL(k, L)  the inner L elements of k become vector lanes (the expander keeps them, see
//                 expand.h): vector loads, a vector accumulator summed once after the loop. L is
//                 the widest of 32, 16, 8 for which the loads stay contiguous (for a quantized
//                 weight: one block).
//   UNROLL(k, u)  u lane groups per iteration (1, 2, 4, 8) for which the lanes are kept and, if
//                 possible, no load is gated per iteration; of those, the fewest divisions and
//                 remainders along k per group (ties: fewer groups): block-level index math (a
//                 super-block's sub-block scales, low or high nibbles) folds to constants once
//                 lanes x groups spans the block.
//   UPCAST(a, n)  output axes become copies, greedily, while the accumulators fit in half the
//                 vector registers: work that does not depend on an axis (a dequantized weight
//                 for the rows of x, a row of x for the outputs) is done once for its copies.
#pragma once
#include <optional>
#include <vector>

#include "codegen/opt/opt.h"

namespace ugrad {

/// The opts above, or nullopt when `ast` is not a dot-product kernel (every REDUCE over one
/// constant range, none inside another; reduces may share a range) or its loads do not allow
/// vector lanes of one width for all of them.
std::optional<std::vector<Opt>> lane_reduce_opts(const UOp& ast, const CodegenTarget& target);

}  // namespace ugrad
