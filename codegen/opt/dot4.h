// int8 dot products on AMD (gfx11 v_dot4_*): a REDUCE ADD in int32/uint32 over a reduce range k
// (constant, K % 4 == 0) of MUL(CAST(LOAD a), CAST(LOAD b)) with 8-bit int loads becomes, with
// k = 4*k4 + j, a REDUCE over k4 of CUSTOM dot4(VECTORIZE(a[j=0..3]), VECTORIZE(b[j=0..3]), 0):
//   sdot4 (int8 x int8), udot4 (uint8 x uint8), sudot4 (int8 x uint8, operands ordered signed
// first). After lower_reduces, pm_fuse_dot4 folds acc + dot4(a, b, 0) into dot4(a, b, acc).
#pragma once
#include <cstdint>
#include <optional>

#include "uop/pattern_matcher.h"
#include "uop/uop.h"

namespace ugrad {

/// Operands per dot product.
inline constexpr int64_t kDot4Width = 4;

/// The reduce axis of an eligible int8 multiply-accumulate in `ast`, if any.
std::optional<int64_t> dot4_axis(const UOp& ast);

/// Rewrites every eligible REDUCE over reduce `axis` into dot4 ops; Error when there is none.
UOp dot4_reduce(const UOp& ast, int64_t axis);

/// acc + dot4(a, b, 0) -> dot4(a, b, acc), on the graph after lower_reduces.
const PatternMatcher& pm_fuse_dot4();

/// CUSTOM dot4: `fn` is "sdot4", "udot4" or "sudot4"; a and b are <4 x i8>, acc i32/u32.
UOp dot4(const std::string& fn, const UOp& a, const UOp& b, const UOp& acc);

}  // namespace ugrad
