// Operand packing (CPU): a load inside a REDUCE that does not depend on output axis `axis` (a
// GEMM's B panel for the row axis) is copied once, outside the `axis` loop, into a contiguous
// scratch buffer (DEFINE_LOCAL, an alloca on the CPU) that the reduce then reads:
//   LOAD(B[k*N + j*32 + u])  ->  P[k'*32 + u] = B[k'*N + j*32 + u] for k' (a loop before the rows);
//                                LOAD(AFTER(P, that loop)[k*32 + u])
// Strided rows of B become one contiguous stream that stays in cache for every row tile. Loops
// nested inside `axis` that the load depends on (a SPLIT of the column tiles) are staged too, so
// one scratch buffer holds several column panels.
#pragma once
#include <cstdint>

#include "uop/uop.h"

namespace ugrad {

/// Largest scratch buffer a pack may use, in elements.
inline constexpr int64_t kMaxPackElements = 1 << 18;

/// `ast` with the first packable load of a REDUCE (independent of range `axis`) packed, or `ast`
/// unchanged when there is none.
UOp pack_operand(const UOp& ast, const UOp& axis);

}  // namespace ugrad
