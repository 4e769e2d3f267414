// int8 dot products on AMD (gfx11 v_dot4_i32_iu8): a REDUCE ADD in int32/uint32 over a reduce
// range k (constant, K % 4 == 0) of MUL(CAST(LOAD a), CAST(LOAD b)) with 8-bit int loads becomes,
// with k = 4*k4 + j, a REDUCE over k4 of DOT4(word a, word b, 0) (uop/ops.h): each side's 4 bytes
// a[j=0..3] as one word (BITCAST of their VECTORIZE), their int8/uint8-ness in the Dot4Arg.
// After lower_reduces, pm_fuse_dot4 folds acc + DOT4(a, b, 0) into DOT4(a, b, acc).
#pragma once
#include <cstdint>
#include <optional>

#include "uop/pattern_matcher.h"
#include "uop/uop.h"

namespace ugrad {

/// Bytes per DOT4 word.
inline constexpr int64_t kDot4Width = 4;

/// The reduce axis of an eligible int8 multiply-accumulate in `ast`, if any.
std::optional<int64_t> dot4_axis(const UOp& ast);

/// Rewrites every eligible REDUCE over reduce `axis` into DOT4 ops; Error when there is none.
UOp dot4_reduce(const UOp& ast, int64_t axis);

/// acc + DOT4(a, b, 0) -> DOT4(a, b, acc), on the graph after lower_reduces.
const PatternMatcher& pm_fuse_dot4();

}  // namespace ugrad
