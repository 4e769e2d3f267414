// The naive reference for BYTE_LUT (uop/ops.h) that the evaluator and the kernels are checked
// against: each byte of a word through a 16-entry table by its low 4 bits.
#pragma once
#include <cstdint>
#include <vector>

namespace ugrad::test {

/// Byte j of the result is table[byte j of w & 15].
inline uint32_t byte_lut_reference(uint32_t w, const std::vector<int64_t>& table) {
  uint32_t r = 0;
  for (int j = 0; j < 4; ++j) r |= uint32_t(table[(w >> (8 * j)) & 15]) << (8 * j);
  return r;
}

/// A table of 16 distinct bytes with both ends of the range (0 and 255) and bytes past 127.
inline std::vector<int64_t> byte_lut_table() {
  return {201, 0, 17, 255, 128, 3, 99, 127, 64, 250, 1, 33, 180, 7, 129, 42};
}

}  // namespace ugrad::test
