// Quantizers of the table-valued 4-bit formats. IQ4_NL and IQ4_XS follow ggml's
// quantize_row_iq4_nl_impl as llama-quantize runs it without an importance matrix: weights x^2, a
// 15-candidate scale search (ntry = 7) per 32-element sub-block, each index the nearest
// kIQ4NLValues entry. MXFP4 follows quantize_row_mxfp4_ref.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/kernels_impl.h"
#include "llm/quant/layout.h"

namespace ugrad::llm::detail {
namespace {

constexpr int kSub = 32;                // sub-block (IQ4_NL block) size
constexpr int kNtry = 7;                // candidate scales (itry + values[0]) / max, itry = -7..7
constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: "all zero" threshold
constexpr int kValues = 16;

// Index of the kIQ4NLValues entry nearest to v (binary search; ties to the lower index).
int best_index(float v) {
  const int8_t* val = kIQ4NLValues;
  if (v <= val[0]) return 0;
  if (v >= val[kValues - 1]) return kValues - 1;
  int lo = 0, hi = kValues - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < val[mid])
      hi = mid;
    else
      lo = mid;
  }
  return v - float(val[hi - 1]) < float(val[hi]) - v ? hi - 1 : hi;
}

// Best weighted scale d for one sub-block (x ~ d * kIQ4NLValues[L]); 0 for an all-zero sub-block.
float fit_subblock(const float* x, uint8_t* L) {
  float w[kSub];
  for (int j = 0; j < kSub; ++j) w[j] = x[j] * x[j];
  float amax = 0, max = 0;
  for (int j = 0; j < kSub; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  const float v0 = float(kIQ4NLValues[0]);
  float d = -max / v0;
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < kSub; ++j) {
    const int l = best_index(id * x[j]);
    L[j] = uint8_t(l);
    const float q = float(kIQ4NLValues[l]);
    sumqx += w[j] * q * x[j];
    sumq2 += w[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -kNtry; itry <= kNtry; ++itry) {
    id = float(itry + kIQ4NLValues[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < kSub; ++j) {
      const float q = float(kIQ4NLValues[best_index(id * x[j])]);
      sumqx += w[j] * q * x[j];
      sumq2 += w[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

}  // namespace

// IQ4_NL: the sub-block's best scale as fp16 d; indices re-picked with the fp32 scale.
void quantize_iq4_nl(const float* x, uint8_t* dst, size_t nblocks) {
  uint8_t L[kSub];
  for (size_t b = 0; b < nblocks; ++b, x += kSub, dst += iq4_nl::kBytes) {
    const float d = fit_subblock(x, L);
    store_f16(dst + iq4_nl::kD, d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    for (int j = 0; j < kSub; ++j) L[j] = uint8_t(best_index(id * x[j]));
    block_layout(GgmlType::IQ4_NL)->quant.store_all(dst, L);
  }
}

// IQ4_XS: super-scale D = -(signed largest sub-scale) / 32; sub-block scale D * l with
// l = clamp(rne(scale / D), -32, 31) stored as l + 32 (4 low bits in scales_l, 2 in scales_h);
// indices re-picked against D * l.
void quantize_iq4_xs(const float* x, uint8_t* dst, size_t nblocks) {
  constexpr int kNsub = kQK_K / kSub;
  const BlockLayout& layout = *block_layout(GgmlType::IQ4_XS);
  uint8_t L[kQK_K];
  float scales[kNsub];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += iq4_xs::kBytes) {
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < kNsub; ++ib) {
      scales[ib] = fit_subblock(x + kSub * ib, L + kSub * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    const float d = -max_scale / 32;  // -0.0 for an all-zero block, as in ggml
    store_f16(dst + iq4_xs::kD, d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    for (int ib = 0; ib < kNsub; ++ib) {
      const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * float(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.0f;
      for (int j = 0; j < kSub; ++j) L[kSub * ib + j] = uint8_t(best_index(idl * x[kSub * ib + j]));
      layout.scale.store(dst, ib, l + iq4_xs::kScaleOffset);
    }
    layout.quant.store_all(dst, L);
  }
}

// MXFP4: e = floor(log2 max|x|) - 2 + 127 (so the largest E2M1 value 6 covers max|x|), or 0 for
// an all-zero block; each element takes the nearest value (first on ties) of the doubled E2M1
// table times 2^(e-128). NOTE: ggml computes floor(log2f(amax)); ilogb is the exact floor, and
// the exponent is clamped at 0 for tiny blocks where ggml's uint8 conversion is undefined.
void quantize_mxfp4(const float* x, uint8_t* dst, size_t nblocks) {
  constexpr int kE2M1MaxExp = 2;  // the largest E2M1 magnitude, 6, is 1.5 * 2^2
  constexpr int kE8M0Bias = 127;
  for (size_t b = 0; b < nblocks; ++b, x += kQK, dst += mxfp4::kBytes) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const int e = amax > 0 ? std::max(0, std::ilogb(amax) - kE2M1MaxExp + kE8M0Bias) : 0;
    const float d = e8m0_to_float_half(uint8_t(e));
    dst[mxfp4::kE] = uint8_t(e);
    auto nearest = [&](float v) {
      int best = 0;
      float best_err = std::fabs(float(kMXFP4Values[0]) * d - v);
      for (int i = 1; i < kValues; ++i) {
        const float err = std::fabs(float(kMXFP4Values[i]) * d - v);
        if (err < best_err) {
          best = i;
          best_err = err;
        }
      }
      return best;
    };
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(nearest(x[j]));
    block_layout(GgmlType::MXFP4)->quant.store_all(dst, q);
  }
}

}  // namespace ugrad::llm::detail
