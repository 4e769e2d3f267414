// Group reduction through LDS: REDUCE(x, ..., r) with r split as r = r_outer*n + lane (lane: a
// GroupReduce range, the workitem id; adjacent lanes read adjacent elements) becomes
//   partial = REDUCE(x, ..., r_outer)            per thread, in registers
//   lds[lane] = partial ; BARRIER                one DEFINE_LOCAL (address space 3) per reduce
//   REDUCE(lds[j], j in 0..n) ; BARRIER          every thread combines the n partials serially,
//                                                then waits (the array may be rewritten in a loop)
// and stores of the result are gated to lane 0. Output loops get a workgroup each (gpu_dims).
#pragma once
#include <cstdint>

#include "uop/uop.h"

namespace ugrad {

/// Splits reduce range `axis` (constant extent, a multiple of `lanes`) across `lanes` threads.
UOp group_reduce(const UOp& ast, int64_t axis, int64_t lanes);

}  // namespace ugrad
