// The fixed 4-bit value tables of the non-linear formats (ggml-common.h facts).
#pragma once
#include <array>
#include <cstdint>

namespace ugrad::llm {

// IQ4_NL / IQ4_XS: the 16 int8 levels a nibble selects (sorted ascending).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// The IQ4_NL levels plus 128, as unsigned bytes (1..241): the weight side of an int8 dot product
// (x86 vpdpbusd takes unsigned bytes there), the 128 taken off per sub-block.
inline constexpr int kIQ4NLOffset = 128;
inline constexpr std::array<uint8_t, 16> kIQ4NLOffsetLevels = [] {
  std::array<uint8_t, 16> t{};
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(kIQ4NLValues[i] + kIQ4NLOffset);
  return t;
}();
// MXFP4: E2M1 values times 2 (sign bit 3); the E8M0 scale is halved to compensate.
inline constexpr int8_t kMXFP4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace ugrad::llm
