// Decompositions: ops and dtypes the LLVM renderer does not emit directly become ones it does.
//   POW(x, y)         -> exp2(y*log2|x|) with the sign and zero cases of C's pow; ints via float64
//   LOAD under a false gate -> 0
//   MULACC(a, b, c)   -> a*b + c
//   DOT4(a, b, acc)   -> 4 byte products + acc where the target has no instruction for it
//   BYTE_LUT(w)       -> uint32 shifts and selects per byte where the target has no byte shuffle
//   bool ADD/MAX, MUL -> OR, AND
//   bfloat16 CAST     -> integer bit operations (round to nearest even; NaN stays NaN)
//   half/bfloat16 ALU -> the same op in float32 where the target lacks native arithmetic
#pragma once
#include "codegen/target.h"
#include "uop/pattern_matcher.h"

namespace ugrad {

/// The decomposition rules; the rewrite context is the CodegenTarget.
const PatternMatcher& pm_decomp();

/// graph_rewrite(u, pm_decomp(), target).
UOp decompose(const UOp& u, const CodegenTarget& target);

}  // namespace ugrad
