// Dequantizers of the table-valued 4-bit formats: IQ4_NL, IQ4_XS, MXFP4.
#include <bit>

#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/kernels_impl.h"

namespace ugrad::llm::detail {
namespace {

constexpr int kHalf = kQK / 2;  // nibble order as Q4_0: qs[j] holds elements j and j+16

}  // namespace

// IQ4_NL: y[j] = d * kIQ4NLValues[lo(qs[j])], y[j+16] = d * kIQ4NLValues[hi(qs[j])].
void dequantize_iq4_nl(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += iq4_nl::kBytes, dst += kQK) {
    const float d = load_f16(src + iq4_nl::kD);
    const uint8_t* qs = src + iq4_nl::kQs;
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = d * float(kIQ4NLValues[qs[j] & 0xF]);
      dst[j + kHalf] = d * float(kIQ4NLValues[qs[j] >> 4]);
    }
  }
}

// IQ4_XS: sub-block ib has 6-bit ls = scales_l nibble | 2 bits of scales_h << 4;
// y = d * (ls - 32) * kIQ4NLValues[q], 16 bytes of Q4_0-ordered nibbles per sub-block.
void dequantize_iq4_xs(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += iq4_xs::kBytes) {
    const float d = load_f16(src + iq4_xs::kD);
    const uint8_t* qs = src + iq4_xs::kQs;
    for (int ib = 0; ib < kQK_K / iq4_xs::kSubBlock; ++ib, qs += kHalf, dst += kQK) {
      const float dl = d * float(iq4_xs_scale(src, ib));
      for (int j = 0; j < kHalf; ++j) {
        dst[j] = dl * float(kIQ4NLValues[qs[j] & 0xF]);
        dst[j + kHalf] = dl * float(kIQ4NLValues[qs[j] >> 4]);
      }
    }
  }
}

// MXFP4: y = 2^(e-128) * kMXFP4Values[q] (E2M1 values doubled), nibbles as Q4_0.
void dequantize_mxfp4(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += mxfp4::kBytes, dst += kQK) {
    const float d = e8m0_to_float_half(src[mxfp4::kE]);
    const uint8_t* qs = src + mxfp4::kQs;
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = float(kMXFP4Values[qs[j] & 0xF]) * d;
      dst[j + kHalf] = float(kMXFP4Values[qs[j] >> 4]) * d;
    }
  }
}

}  // namespace ugrad::llm::detail
