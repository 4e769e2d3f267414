// Block layouts of the ggml quant formats: element counts, field byte offsets within one block,
// and little-endian field readers/writers. Where each integer lies within these fields is
// layout.h's description, written with these offsets.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base/float16.h"
#include "llm/quant/formats.h"

namespace ugrad::llm {

inline constexpr int kQK = 32;     // block size of the legacy formats, IQ4_NL and MXFP4
inline constexpr int kQK_K = 256;  // super-block size of the K formats and IQ4_XS

// Q8_0: fp16 d, int8 qs[32]; y = d * q.
namespace q8_0 {
inline constexpr size_t kD = 0, kQs = 2, kBytes = 34;
}
// Q4_0: fp16 d, u8 qs[16]; low nibble of qs[j] -> element j, high -> j+16; y = d * (q - 8).
namespace q4_0 {
inline constexpr size_t kD = 0, kQs = 2, kBytes = 18;
inline constexpr int kOffset = 8;
}  // namespace q4_0
// Q4_1: fp16 d, fp16 m, u8 qs[16] (nibbles as Q4_0); y = d * q + m.
namespace q4_1 {
inline constexpr size_t kD = 0, kM = 2, kQs = 4, kBytes = 20;
}
// Q5_0: fp16 d, u32 qh (bit e = 5th bit of element e), u8 qs[16]; y = d * (q - 16).
namespace q5_0 {
inline constexpr size_t kD = 0, kQh = 2, kQs = 6, kBytes = 22;
inline constexpr int kOffset = 16;
}  // namespace q5_0
// Q5_1: fp16 d, fp16 m, u32 qh, u8 qs[16]; y = d * q + m.
namespace q5_1 {
inline constexpr size_t kD = 0, kM = 2, kQh = 4, kQs = 8, kBytes = 24;
}
// IQ4_NL: fp16 d, u8 qs[16] (nibbles as Q4_0); y = d * kIQ4NLValues[q].
namespace iq4_nl {
inline constexpr size_t kD = 0, kQs = 2, kBytes = 18;
}
// MXFP4: u8 e (E8M0 scale), u8 qs[16] (nibbles as Q4_0, E2M1 codes); y = 2^(e-128) *
// kMXFP4Values[q].
namespace mxfp4 {
inline constexpr size_t kE = 0, kQs = 1, kBytes = 17;
}
// Q2_K and Q3_K pack 2-bit quants 4 per byte: element 128h + 32s + l is bits 2s..2s+1 of
// qs[32h + l] (h = 0, 1; s = 0..3; l = 0..31).
// Q2_K: u8 scales[16] (low nibble a 4-bit scale, high nibble a 4-bit min), u8 qs[64], fp16 d,
// fp16 dmin. 16 sub-blocks of 16; sub-block j: y = d*(scales[j] & 15) * q - dmin*(scales[j] >> 4).
namespace q2_k {
inline constexpr size_t kScales = 0, kQs = 16, kD = 80, kDmin = 82, kBytes = 84;
inline constexpr int kSubBlock = 16;
}  // namespace q2_k
// Q3_K: u8 hmask[32] (bit e/32 of hmask[e%32] is the 3rd bit of element e), u8 qs[64] (the low 2
// bits), u8 scales[12] (16 6-bit scales, see layout.cpp), fp16 d (last). 16 sub-blocks of
// 16; y = d * (sc_j - 32) * (q - 4) with q = low | high << 2.
namespace q3_k {
inline constexpr size_t kHmask = 0, kQs = 32, kScales = 96, kD = 108, kBytes = 110;
inline constexpr int kSubBlock = 16, kOffset = 4, kScaleOffset = 32, kScaleBytes = 12;
}  // namespace q3_k
// Q4_K: fp16 d, fp16 dmin, u8 scales[12] (8 6-bit scales + 8 6-bit mins), u8 qs[128].
// 8 sub-blocks of 32; sub-block j uses qs[32*(j/2)...], low nibbles if j even, high if odd.
namespace q4_k {
inline constexpr size_t kD = 0, kDmin = 2, kScales = 4, kQs = 16, kBytes = 144;
inline constexpr int kSubBlock = 32, kScaleBytes = 12;
}  // namespace q4_k
// Q5_K: as Q4_K plus u8 qh[32]: bit j of qh[l] is the 5th bit of element 32*j + l.
namespace q5_k {
inline constexpr size_t kD = 0, kDmin = 2, kScales = 4, kQh = 16, kQs = 48, kBytes = 176;
inline constexpr int kSubBlock = 32;
}  // namespace q5_k
// Q6_K: u8 ql[128] (low 4 bits), u8 qh[64] (high 2 bits), i8 scales[16], fp16 d (last).
// 16 sub-blocks of 16; y = d * scales[e/16] * (q - 32).
namespace q6_k {
inline constexpr size_t kQl = 0, kQh = 128, kScales = 192, kD = 208, kBytes = 210;
inline constexpr int kSubBlock = 16, kOffset = 32;
}  // namespace q6_k
// Q8_K: f32 d, i8 qs[256], i16 bsums[16] (sums of qs per 16); activations only, never in files.
namespace q8_k {
inline constexpr size_t kD = 0, kQs = 4, kBsums = 260, kBytes = 292;
inline constexpr int kGroup = 16;
}  // namespace q8_k
// IQ4_XS: fp16 d, u16 scales_h (2 high bits per sub-block), u8 scales_l[4] (4 low bits per
// sub-block), u8 qs[128]; 8 sub-blocks of 32, each with 16 bytes of Q4_0-ordered nibbles;
// y = d * (ls - 32) * kIQ4NLValues[q].
namespace iq4_xs {
inline constexpr size_t kD = 0, kScalesH = 2, kScalesL = 4, kQs = 8, kBytes = 136;
inline constexpr int kSubBlock = 32, kScaleOffset = 32;
}  // namespace iq4_xs

/// Bytes per block of a known type, at compile time (from the one table).
constexpr uint32_t block_bytes_of(GgmlType t) {
  switch (t) {
#define UGRAD_GGML_TYPE_BYTES(name, id, block, bytes) \
  case GgmlType::name:                                \
    return bytes;
    UGRAD_FOR_EACH_GGML_TYPE(UGRAD_GGML_TYPE_BYTES)
#undef UGRAD_GGML_TYPE_BYTES
  }
  return 0;
}

// The layouts above must agree with the table.
static_assert(q8_0::kBytes == block_bytes_of(GgmlType::Q8_0));
static_assert(q4_0::kBytes == block_bytes_of(GgmlType::Q4_0));
static_assert(q4_1::kBytes == block_bytes_of(GgmlType::Q4_1));
static_assert(q5_0::kBytes == block_bytes_of(GgmlType::Q5_0));
static_assert(q5_1::kBytes == block_bytes_of(GgmlType::Q5_1));
static_assert(iq4_nl::kBytes == block_bytes_of(GgmlType::IQ4_NL));
static_assert(mxfp4::kBytes == block_bytes_of(GgmlType::MXFP4));
static_assert(q2_k::kBytes == block_bytes_of(GgmlType::Q2_K));
static_assert(q3_k::kBytes == block_bytes_of(GgmlType::Q3_K));
static_assert(q4_k::kBytes == block_bytes_of(GgmlType::Q4_K));
static_assert(q5_k::kBytes == block_bytes_of(GgmlType::Q5_K));
static_assert(q6_k::kBytes == block_bytes_of(GgmlType::Q6_K));
static_assert(q8_k::kBytes == block_bytes_of(GgmlType::Q8_K));
static_assert(iq4_xs::kBytes == block_bytes_of(GgmlType::IQ4_XS));

/// Little-endian u16 at p.
inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
/// Little-endian u32 at p.
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
/// fp16 at p, as float.
inline float load_f16(const uint8_t* p) { return half_to_float(load_u16(p)); }
/// Little-endian f32 at p.
inline float load_f32(const uint8_t* p) { return std::bit_cast<float>(load_u32(p)); }
/// Stores v little-endian at p.
inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
/// Stores v little-endian at p.
inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
/// Stores fp16(v) (round to nearest even) at p.
inline void store_f16(uint8_t* p, float v) { store_u16(p, float_to_half(v)); }

/// MXFP4's E8M0 exponent e -> 2^(e-128): half the scale 2^(e-127), because kMXFP4Values holds
/// the E2M1 values doubled. e < 2 gives float subnormals.
inline float e8m0_to_float_half(uint8_t e) {
  if (e < 2) return std::bit_cast<float>(uint32_t(0x00200000u) << e);
  return std::bit_cast<float>(uint32_t(e - 1) << 23);
}

}  // namespace ugrad::llm
