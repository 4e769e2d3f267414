// The naive reference for DOT4 (uop/ops.h) that the evaluator, the CPU kernels and the gfx1100
// kernels are checked against: each word's 4 bytes as int8 or uint8, multiplied pairwise in
// 64 bits, summed with the accumulator and wrapped to 32 bits.
#pragma once
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace ugrad::test {

/// acc + sum_j a[j]*b[j] over the bytes j of the words a and b, as `signs` reads them.
inline int32_t dot4_reference(uint32_t a, uint32_t b, int32_t acc, Dot4Arg signs) {
  int64_t sum = acc;
  for (int j = 0; j < 4; ++j) {
    const uint8_t x = uint8_t(a >> (8 * j)), y = uint8_t(b >> (8 * j));
    sum += (signs.a_signed ? int64_t{int8_t(x)} : int64_t{x}) *
           (signs.b_signed ? int64_t{int8_t(y)} : int64_t{y});
  }
  return int32_t(uint32_t(uint64_t(sum)));
}

/// The four signedness combinations: uint8 x uint8, uint8 x int8 (x86 VNNI), int8 x uint8,
/// int8 x int8.
inline std::vector<Dot4Arg> all_dot4_signs() {
  return {{false, false}, {false, true}, {true, false}, {true, true}};
}

/// Words whose bytes are the extremes of both readings: 0, 127, 128 (-128), 255 (-1), and mixes.
inline std::vector<uint32_t> extreme_dot4_words() {
  return {0u, 0xffffffffu, 0x80808080u, 0x7f7f7f7fu, 0x017f80ffu, 0xff807f01u, 0x12345678u};
}

}  // namespace ugrad::test
