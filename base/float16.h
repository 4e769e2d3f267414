// Exact IEEE binary16 (half) and bfloat16 conversions, header-only and constexpr.
// float -> half and float -> bf16 round to nearest, ties to even (as F16C and ggml do); infinities
// and subnormals are exact; NaN stays NaN, made quiet (payload's top bits kept), as hardware does.
#pragma once
#include <bit>
#include <cstdint>

namespace ugrad {

namespace f16_detail {
// binary32: 1 sign, 8 exponent (bias 127), 23 mantissa bits.
inline constexpr uint32_t kF32SignMask = 0x80000000u;
inline constexpr uint32_t kF32AbsMask = 0x7fffffffu;
inline constexpr uint32_t kF32ExpMask = 0x7f800000u;  // also the bits of +inf
inline constexpr int kF32MantBits = 23;
// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline constexpr uint16_t kF16SignMask = 0x8000u;
inline constexpr uint16_t kF16AbsMask = 0x7fffu;
inline constexpr uint16_t kF16ExpMask = 0x7c00u;  // also the bits of +inf
inline constexpr uint16_t kF16MantMask = 0x03ffu;
inline constexpr uint16_t kF16QuietBit = 0x0200u;
inline constexpr int kF16MantBits = 10;
inline constexpr int kMantShift = kF32MantBits - kF16MantBits;  // 13 bits dropped
inline constexpr uint32_t kRebias = uint32_t(127 - 15) << kF32MantBits;
// |x| >= 65520 (halfway between 65504, the largest half, and 65536) rounds to inf.
inline constexpr uint32_t kF16OverflowBits = 0x477ff000u;
// |x| >= 2^-14, the smallest normal half.
inline constexpr uint32_t kF16MinNormalBits = 0x38800000u;
// bfloat16 is the top half of a binary32.
inline constexpr uint32_t kBF16QuietBit = 0x0040u;
}  // namespace f16_detail

/// binary16 bits -> float (exact; NaN payload kept, made quiet).
constexpr float half_to_float(uint16_t h) {
  using namespace f16_detail;
  // Written as selects rather than branches so that loops over it vectorize.
  const uint32_t sign = uint32_t(h & kF16SignMask) << 16;
  const uint32_t em = h & kF16AbsMask;  // exponent and mantissa
  const uint32_t shifted = em << kMantShift;
  const uint32_t normal = shifted + kRebias;
  // inf/NaN: exponent all ones; NaN additionally quiet.
  const uint32_t quiet = (em > kF16ExpMask) ? (uint32_t(kF16QuietBit) << kMantShift) : 0;
  const uint32_t special = kF32ExpMask | quiet | shifted;
  // zero/subnormal: em * 2^-24 is exact in float.
  const uint32_t tiny = std::bit_cast<uint32_t>(float(em) * 0x1p-24f);
  const uint32_t mag = em >= kF16ExpMask ? special : em < (1u << kF16MantBits) ? tiny : normal;
  return std::bit_cast<float>(sign | mag);
}

/// float -> binary16 bits, round to nearest even; overflow gives inf; NaN gives a quiet NaN.
constexpr uint16_t float_to_half(float f) {
  using namespace f16_detail;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x & kF32SignMask) >> 16);
  const uint32_t abs = x & kF32AbsMask;
  if (abs > kF32ExpMask)  // NaN: keep the payload's top 10 bits, set the quiet bit
    return uint16_t(sign | kF16ExpMask | kF16QuietBit | ((abs >> kMantShift) & kF16MantMask));
  if (abs >= kF16OverflowBits) return uint16_t(sign | kF16ExpMask);  // inf, or rounds to inf
  if (abs >= kF16MinNormalBits) {
    // Normal half: rebias the exponent, then round the 13 dropped bits to nearest even. A carry
    // out of the mantissa correctly bumps the exponent.
    const uint32_t v = abs - kRebias;
    const uint32_t odd = (v >> kMantShift) & 1;
    return uint16_t(sign | ((v + ((1u << (kMantShift - 1)) - 1) + odd) >> kMantShift));
  }
  // Subnormal half: result = round(|x| * 2^24) = round(sig * 2^(e - 126)), e the biased exponent.
  const int e = int(abs >> kF32MantBits);
  const int shift = 126 - e;              // >= 14 here
  if (e == 0 || shift > 24) return sign;  // below 2^-25 (or float subnormal): rounds to zero
  const uint32_t sig = (abs & 0x7fffffu) | 0x800000u;
  uint32_t q = sig >> shift;
  const uint32_t rem = sig & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1))) ++q;  // may carry into the smallest normal
  return uint16_t(sign | q);
}

/// bfloat16 bits -> float (exact).
constexpr float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

/// float -> bfloat16 bits, round to nearest even; NaN stays NaN (made quiet).
constexpr uint16_t float_to_bf16(float f) {
  using namespace f16_detail;
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & kF32AbsMask) > kF32ExpMask) return uint16_t((x >> 16) | kBF16QuietBit);
  const uint32_t odd = (x >> 16) & 1;
  return uint16_t((x + 0x7fffu + odd) >> 16);  // overflow past the max rounds to inf, as RNE must
}

}  // namespace ugrad
