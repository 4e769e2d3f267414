// Loops and accumulators made explicit:
//   REDUCE(x, r...) -> acc = DEFINE_REG; STORE(acc, identity) inside the reduce's outer loops;
//                      END(STORE(acc, acc op x), r...); the value is LOAD(AFTER(acc, END))
//   STORE(...)      -> END(STORE(...), its output ranges...)
// Reduces over the same ranges with the same outer loops share one loop (one END over a GROUP of
// accumulator updates): an upcast GEMM tile keeps all its accumulators in one reduce loop.
// A reduce over a lane axis (an Unroll range left by the expander) accumulates a vector, and its
// value is REDUCE(LOAD(acc), lane): the lanes summed once after the loop (the renderer emits it).
#pragma once
#include "uop/uop.h"

namespace ugrad {

/// `ast` (a SINK of STOREs, REDUCEs inside) with every REDUCE lowered to an accumulator and every
/// store closed by an END over its output loops. A whole-graph pass: reduces over the same ranges
/// in the same loops share one accumulator loop, and stores with the same loops one loop nest.
UOp lower_reduces(const UOp& ast);

/// The identity of a reduce op in `dtype`: 0 for ADD, 1 for MUL, -inf (or the minimum) for MAX.
UOp reduce_identity(Op op, DType dtype);

}  // namespace ugrad
