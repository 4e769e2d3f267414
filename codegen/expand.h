// The expander: UPCAST and UNROLL ranges become copies of the code with the range replaced by each
// of its constant values. An upcast store becomes n stores (LLVM's SLP vectorizer turns adjacent
// ones into vector stores); an unrolled REDUCE sums its n copies inside one loop iteration.
#pragma once
#include "uop/uop.h"

namespace ugrad {

/// `ast` with every Upcast and Unroll range expanded away.
UOp expand_ranges(const UOp& ast);

}  // namespace ugrad
