// The expander: UPCAST and UNROLL ranges become copies of the code with the range replaced by each
// of its constant values. An upcast store becomes n stores (LLVM's SLP vectorizer turns adjacent
// ones into vector stores); an unrolled REDUCE sums its n copies inside one loop iteration.
// One upcast along which the stores are contiguous may instead stay: the renderer gives every
// value that depends on it that many vector lanes (loads and stores become vector accesses).
// An unroll along which every load is contiguous (a dot product over a contiguous axis) is kept
// in preference, as lane axis: its reduce accumulates a vector and sums the lanes once at the end
// (lower_reduce.h); every upcast then becomes copies.
#pragma once
#include "uop/uop.h"

namespace ugrad {

/// Most lanes of a vector axis.
inline constexpr int64_t kMaxVectorLanes = 64;

/// `ast` with every Unroll range and every Upcast range but at most one (the vector axis, when
/// `vectorize`: an Unroll lane axis or an Upcast) expanded away.
/// A whole-graph pass: a range is replaced by its values in every node at once, and which axis
/// keeps vector lanes is decided from all the stores and loads together.
UOp expand_ranges(const UOp& ast, bool vectorize);

}  // namespace ugrad
