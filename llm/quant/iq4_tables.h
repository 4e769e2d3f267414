// The fixed 4-bit value tables of the non-linear formats (ggml-common.h facts).
#pragma once
#include <cstdint>

namespace ugrad::llm {

// IQ4_NL / IQ4_XS: the 16 int8 levels a nibble selects (sorted ascending).
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// MXFP4: E2M1 values times 2 (sign bit 3); the E8M0 scale is halved to compensate.
inline constexpr int8_t kMXFP4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace ugrad::llm
