// Dequantizers of the K formats (256-element super-blocks with quantized sub-block scales).
#include <cstring>

#include "llm/quant/blocks.h"
#include "llm/quant/kernels_impl.h"

namespace ugrad::llm::detail {
namespace {
constexpr int kGroup = 64;   // Q4_K/Q5_K: a group of 64 elements shares 32 bytes of qs
constexpr int kHalfK = 128;  // Q6_K: each half of 128 elements has its own ql/qh/scales slices
}  // namespace

// Q2_K: sub-block j: y = d*(scales[j] & 15) * q - dmin*(scales[j] >> 4), q the 2-bit quant.
void dequantize_q2_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q2_k::kBytes) {
    const float d = load_f16(src + q2_k::kD);
    const float dmin = load_f16(src + q2_k::kDmin);
    const uint8_t* qs = src + q2_k::kQs;
    for (int j = 0; j < kQK_K / q2_k::kSubBlock; ++j) {
      const uint8_t sc = src[q2_k::kScales + j];
      const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
      for (int l = 0; l < q2_k::kSubBlock; ++l)
        *dst++ = dl * float(quant_2bit(qs, q2_k::kSubBlock * j + l)) - ml;
    }
  }
}

// Q3_K: sub-block j: y = d*(sc_j - 32) * (q - 4), q = 2-bit quant | hmask bit << 2.
void dequantize_q3_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q3_k::kBytes) {
    const float d = load_f16(src + q3_k::kD);
    const uint8_t* hmask = src + q3_k::kHmask;
    const uint8_t* qs = src + q3_k::kQs;
    for (int j = 0; j < kQK_K / q3_k::kSubBlock; ++j) {
      const float dl = d * float(unpack_scale_q3_k(j, src + q3_k::kScales) - q3_k::kScaleOffset);
      for (int l = 0; l < q3_k::kSubBlock; ++l) {
        const int e = q3_k::kSubBlock * j + l;
        const int high = (hmask[e % 32] >> (e / 32)) & 1;
        *dst++ = dl * float(quant_2bit(qs, e) + 4 * high - q3_k::kOffset);
      }
    }
  }
}

// Q4_K: sub-block j: y = d*sc_j * q - dmin*m_j; group g uses qs[32g..], lo nibble for j=2g.
void dequantize_q4_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q4_k::kBytes) {
    const float d = load_f16(src + q4_k::kD);
    const float dmin = load_f16(src + q4_k::kDmin);
    const uint8_t* scales = src + q4_k::kScales;
    const uint8_t* qs = src + q4_k::kQs;
    for (int g = 0; g < kQK_K / kGroup; ++g, qs += q4_k::kSubBlock) {
      uint8_t sc, m;
      unpack_scale_min_k4(2 * g, scales, &sc, &m);
      const float d_lo = d * sc, m_lo = dmin * m;
      unpack_scale_min_k4(2 * g + 1, scales, &sc, &m);
      const float d_hi = d * sc, m_hi = dmin * m;
      for (int l = 0; l < q4_k::kSubBlock; ++l) *dst++ = d_lo * float(qs[l] & 0xF) - m_lo;
      for (int l = 0; l < q4_k::kSubBlock; ++l) *dst++ = d_hi * float(qs[l] >> 4) - m_hi;
    }
  }
}

// Q5_K: as Q4_K with a 5th bit: bit j of qh[l] for sub-block j.
void dequantize_q5_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q5_k::kBytes) {
    const float d = load_f16(src + q5_k::kD);
    const float dmin = load_f16(src + q5_k::kDmin);
    const uint8_t* scales = src + q5_k::kScales;
    const uint8_t* qh = src + q5_k::kQh;
    const uint8_t* qs = src + q5_k::kQs;
    for (int g = 0; g < kQK_K / kGroup; ++g, qs += q5_k::kSubBlock) {
      uint8_t sc, m;
      unpack_scale_min_k4(2 * g, scales, &sc, &m);
      const float d_lo = d * sc, m_lo = dmin * m;
      unpack_scale_min_k4(2 * g + 1, scales, &sc, &m);
      const float d_hi = d * sc, m_hi = dmin * m;
      for (int l = 0; l < q5_k::kSubBlock; ++l)
        *dst++ = d_lo * float((qs[l] & 0xF) + (((qh[l] >> (2 * g)) & 1) << 4)) - m_lo;
      for (int l = 0; l < q5_k::kSubBlock; ++l)
        *dst++ = d_hi * float((qs[l] >> 4) + (((qh[l] >> (2 * g + 1)) & 1) << 4)) - m_hi;
    }
  }
}

// Q6_K: half h, l = 0..31: four 6-bit quants from ql[l], ql[l+32] (nibbles) and qh[l] (2-bit
// pairs) land at 128h + l + {0, 32, 64, 96}; y = d * scales[e/16] * (q - 32).
void dequantize_q6_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q6_k::kBytes) {
    const float d = load_f16(src + q6_k::kD);
    const uint8_t* ql = src + q6_k::kQl;
    const uint8_t* qh = src + q6_k::kQh;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + q6_k::kScales);
    for (int h = 0; h < kQK_K / kHalfK; ++h, ql += 64, qh += 32, sc += 8, dst += kHalfK) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / q6_k::kSubBlock;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - q6_k::kOffset;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - q6_k::kOffset;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - q6_k::kOffset;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - q6_k::kOffset;
        dst[l] = d * float(sc[is]) * float(q1);
        dst[l + 32] = d * float(sc[is + 2]) * float(q2);
        dst[l + 64] = d * float(sc[is + 4]) * float(q3);
        dst[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
    }
  }
}

// Q8_K: y = d * q (d is f32).
void dequantize_q8_k(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q8_k::kBytes, dst += kQK_K) {
    const float d = load_f32(src + q8_k::kD);
    const int8_t* qs = reinterpret_cast<const int8_t*>(src + q8_k::kQs);
    for (int j = 0; j < kQK_K; ++j) dst[j] = d * float(qs[j]);
  }
}

}  // namespace ugrad::llm::detail
