// Quantizers of the K formats, following ggml's quantize_row_q{2,3,4,5,6,8}_K_ref: sub-block
// (scale, min) searches in fp32, 4-, 6- or 8-bit quantized sub-block scales, then every element is
// re-quantized against the stored fp16 super-scale times its quantized sub-block scale.
// All sums run sequentially in fp32 in ggml's order, so the blocks come out byte-identical.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "llm/quant/blocks.h"
#include "llm/quant/kernels_impl.h"
#include "llm/quant/layout.h"

namespace ugrad::llm::detail {
namespace {

constexpr int kSubBlocks = kQK_K / 32;    // Q4_K/Q5_K: 8 sub-blocks of 32
constexpr int kSubBlocks16 = kQK_K / 16;  // Q2_K/Q3_K/Q6_K: 16 sub-blocks of 16
constexpr int kScaleMax4 = 15;            // largest 4-bit sub-block scale / min (Q2_K)
constexpr int kScaleMax6 = 63;            // largest 6-bit sub-block scale / min
constexpr float kGroupMaxEps = 1e-15f;    // ggml's GROUP_MAX_EPS: "all zero" threshold

// A (rmin, rdelta, nstep) scale search of make_qkx2_quants, scored by weighted squared error or
// (Q2_K) weighted absolute error.
struct ScaleSearch {
  float rmin, rdelta;
  int nstep;
  bool abs_error;
};
constexpr ScaleSearch kSearchQ2K = {-0.5f, 0.1f, 15, true};
constexpr ScaleSearch kSearchQ4K = {-1.0f, 0.1f, 20, false};
constexpr ScaleSearch kSearchQ5K = {-0.5f, 0.1f, 15, false};

// w * |diff| or w * diff^2, as the search scores errors.
float weighted_error(float w, float diff, ScaleSearch search) {
  return w * (search.abs_error ? std::fabs(diff) : diff * diff);
}

// Affine weighted fit x ~ scale * L + min with L in [0, nmax], min <= 0 (ggml's make_qkx2_quants):
// try iscale = (nmax + rmin + rdelta*is) / (max - min) for is = 0..nstep, solve
// the 2x2 weighted least squares for each quantization and keep the lowest error.
// Returns the scale; *neg_min receives -min (>= 0).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                    ScaleSearch search) {
  uint8_t Laux[32];
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    *neg_min = -min;
    return 0.0f;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
    L[i] = uint8_t(l);
    best_error += weighted_error(w[i], scale * float(l) + min - x[i], search);
  }
  for (int is = 0; is <= search.nstep; ++is) {
    iscale = (search.rmin + search.rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = uint8_t(l);
      sum_l += w[i] * float(l);
      sum_l2 += w[i] * float(l) * float(l);
      sum_xl += w[i] * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i)
        cur_error += weighted_error(w[i], this_scale * float(Laux[i]) + this_min - x[i], search);
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

// The element of largest magnitude, first on ties, with its sign (0 when all are zero).
float signed_max(int n, const float* x) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Σwxl and Σwl² with weights w = x^2, in ggml's float order.
struct SymmetricSums {
  float lx = 0, l2 = 0;
  void add(float x, int l) {
    const float w = x * x;
    lx += w * x * float(l);
    l2 += w * float(l) * float(l);
  }
};

// l = clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1) for every i (into L when given, plus
// `offset`) and their sums.
SymmetricSums quantize_symmetric(int n, int nmax, const float* x, float iscale, int8_t* L,
                                 int offset) {
  SymmetricSums sums;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    if (L) L[i] = int8_t(l + offset);
    sums.add(x[i], l);
  }
  return sums;
}

// Symmetric fit x ~ scale * l, l in [-nmax, nmax-1], weights x^2 (ggml's make_qx_quants with
// rmse_type 1): 19 candidate scales -(nmax + 0.1*is)/max, keep the best (Σwxl)^2/Σwl^2.
// L receives l + nmax. Returns the scale (0 for an all-zero group).
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
  const float max = signed_max(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  SymmetricSums sums = quantize_symmetric(n, nmax, x, -float(nmax) / max, L, nmax);
  float scale = sums.l2 != 0 ? sums.lx / sums.l2 : 0.0f;
  float best = scale * sums.lx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sums = quantize_symmetric(n, nmax, x, iscale, nullptr, 0);
    if (sums.l2 > 0 && sums.lx * sums.lx > best * sums.l2) {
      quantize_symmetric(n, nmax, x, iscale, L, nmax);
      scale = sums.lx / sums.l2;
      best = scale * sums.lx;
    }
  }
  return scale;
}

// The quants of one affine sub-block against its stored scale d and offset dm:
// clamp(nearest_int((x + dm) / d), 0, nmax). A zero d keeps the fit's quants, as ggml does.
void requantize_affine(int n, int nmax, const float* x, float d, float dm, uint8_t* L) {
  if (d == 0.0f) return;
  for (int i = 0; i < n; ++i) L[i] = uint8_t(std::clamp(nearest_int((x[i] + dm) / d), 0, nmax));
}

// Symmetric fit x ~ scale * l, l in [-nmax, nmax-1], weights x^2 (ggml's make_q3_quants with
// rmse): start from iscale = -nmax/max, then up to 5 sweeps that move one quant at a time to
// nearest_int(x * Σwl² / Σwxl) (sums without that element) when it raises (Σwxl)²/Σwl².
// L receives l + nmax, or 0 everywhere for an all-zero group. Returns Σwxl/Σwl².
float fit_scale_refined(int n, int nmax, const float* x, int8_t* L) {
  constexpr int kSweeps = 5;
  const float max = signed_max(n, x);
  if (std::fabs(max) < kGroupMaxEps) {
    std::fill(L, L + n, int8_t(0));
    return 0.0f;
  }
  const SymmetricSums start = quantize_symmetric(n, nmax, x, -float(nmax) / max, L, 0);
  float sumlx = start.lx, suml2 = start.l2;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (!(slx > 0)) continue;  // NaN too, as ggml's test
      float sl2 = suml2 - w * float(L[i]) * float(L[i]);
      const int l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      slx += w * x[i] * float(l);
      sl2 += w * float(l) * float(l);
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = int8_t(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The shared Q4_K/Q5_K front half: per-sub-block affine fits (weights av + |x|, av the sub-block
// RMS), 6-bit scales and mins, fp16 d/dmin, then L re-derived from the stored values.
// Writes d, dmin and the 12 scale bytes at block; L receives 256 quants in [0, nmax].
void quantize_k_affine(const BlockLayout& layout, const float* x, uint8_t* block, int nmax,
                       ScaleSearch search, uint8_t* L) {
  constexpr int kSub = 32;
  float scales[kSubBlocks], mins[kSubBlocks], weights[kSub];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + kSub * j;
    float sum_x2 = 0;
    for (int l = 0; l < kSub; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / kSub);
    for (int l = 0; l < kSub; ++l) weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = fit_scale_min(kSub, nmax, xs, weights, L + kSub * j, &mins[j], search);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? float(kScaleMax6) / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? float(kScaleMax6) / max_min : 0.0f;
  for (int j = 0; j < kSubBlocks; ++j) {
    layout.scale.store(block, j,
                       std::min(kScaleMax6, int(uint8_t(nearest_int(inv_scale * scales[j])))));
    layout.min.store(block, j, std::min(kScaleMax6, int(uint8_t(nearest_int(inv_min * mins[j])))));
  }
  store_f16(block + layout.d, max_scale / float(kScaleMax6));
  store_f16(block + layout.m, max_min / float(kScaleMax6));
  const float d_stored = load_f16(block + layout.d);
  const float dmin_stored = load_f16(block + layout.m);
  for (int j = 0; j < kSubBlocks; ++j)
    requantize_affine(kSub, nmax, x + kSub * j, d_stored * float(layout.scale.read(block, j)),
                      dmin_stored * float(layout.min.read(block, j)), L + kSub * j);
}

}  // namespace

// Q2_K: 16 sub-blocks of 16, affine fits (weights |x|, absolute error), 4-bit scales and mins
// relative to d = max scale / 15 and dmin = max min / 15, 2-bit quants (nmax 3).
void quantize_q2_k(const float* x, uint8_t* dst, size_t nblocks) {
  constexpr int kSub = q2_k::kSubBlock;
  const BlockLayout& layout = *block_layout(GgmlType::Q2_K);
  uint8_t L[kQK_K];
  float scales[kSubBlocks16], mins[kSubBlocks16], weights[kSub];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q2_k::kBytes) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kSubBlocks16; ++j) {
      for (int l = 0; l < kSub; ++l) weights[l] = std::fabs(x[kSub * j + l]);
      scales[j] = fit_scale_min(kSub, 3, x + kSub * j, weights, L + kSub * j, &mins[j], kSearchQ2K);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    // A zero maximum gives zero codes and a zero d (dmin), as ggml's separate branch does.
    const float inv_scale = max_scale > 0 ? float(kScaleMax4) / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? float(kScaleMax4) / max_min : 0.0f;
    for (int j = 0; j < kSubBlocks16; ++j) {
      layout.scale.store(dst, j, nearest_int(inv_scale * scales[j]));
      layout.min.store(dst, j, nearest_int(inv_min * mins[j]));
    }
    store_f16(dst + q2_k::kD, max_scale / float(kScaleMax4));
    store_f16(dst + q2_k::kDmin, max_min / float(kScaleMax4));
    const float d_stored = load_f16(dst + q2_k::kD);
    const float dmin_stored = load_f16(dst + q2_k::kDmin);
    for (int j = 0; j < kSubBlocks16; ++j)
      requantize_affine(kSub, 3, x + kSub * j, d_stored * float(layout.scale.read(dst, j)),
                        dmin_stored * float(layout.min.read(dst, j)), L + kSub * j);
    layout.quant.store_all(dst, L);
  }
}

// Q3_K: 16 sub-blocks of 16, refined symmetric fits, 6-bit scales relative to d = max / -32
// (signed largest sub-block scale), 3-bit quants split into 2 low bits and an hmask bit.
void quantize_q3_k(const float* x, uint8_t* dst, size_t nblocks) {
  constexpr int kSub = q3_k::kSubBlock;
  const BlockLayout& layout = *block_layout(GgmlType::Q3_K);
  int8_t L[kQK_K];
  float scales[kSubBlocks16];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q3_k::kBytes) {
    for (int j = 0; j < kSubBlocks16; ++j)
      scales[j] = fit_scale_refined(kSub, q3_k::kOffset, x + kSub * j, L + kSub * j);
    const float max_scale = signed_max(kSubBlocks16, scales);
    std::memset(dst + q3_k::kScales, 0, q3_k::kScaleBytes);
    if (max_scale != 0.0f) {
      const float iscale = -float(q3_k::kScaleOffset) / max_scale;
      for (int j = 0; j < kSubBlocks16; ++j) {
        const int ls = std::clamp(nearest_int(iscale * scales[j]), -q3_k::kScaleOffset,
                                  q3_k::kScaleOffset - 1) +
                       q3_k::kScaleOffset;
        layout.scale.store(dst, j, ls);
      }
      store_f16(dst + q3_k::kD, 1 / iscale);
    } else {
      store_f16(dst + q3_k::kD, 0.0f);
    }
    const float d_stored = load_f16(dst + q3_k::kD);
    for (int j = 0; j < kSubBlocks16; ++j) {
      const float d = d_stored * float(layout.scale.read(dst, j));
      if (d == 0.0f) continue;  // keep the fit's quants, as ggml does
      for (int i = 0; i < kSub; ++i) {
        const int l =
            std::clamp(nearest_int(x[kSub * j + i] / d), -q3_k::kOffset, q3_k::kOffset - 1);
        L[kSub * j + i] = int8_t(l + q3_k::kOffset);
      }
    }
    layout.quant.store_all(dst, reinterpret_cast<const uint8_t*>(L));  // L: 0..7
  }
}

// Q4_K: 8 sub-blocks of 32, 6-bit scales and mins, 4-bit quants (nmax 15).
void quantize_q4_k(const float* x, uint8_t* dst, size_t nblocks) {
  const BlockLayout& layout = *block_layout(GgmlType::Q4_K);
  uint8_t L[kQK_K];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q4_k::kBytes) {
    quantize_k_affine(layout, x, dst, 15, kSearchQ4K, L);
    layout.quant.store_all(dst, L);
  }
}

// Q5_K: as Q4_K with 5-bit quants (nmax 31); the 5th bit of sub-block j goes to bit j of qh[l].
void quantize_q5_k(const float* x, uint8_t* dst, size_t nblocks) {
  const BlockLayout& layout = *block_layout(GgmlType::Q5_K);
  uint8_t L[kQK_K];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q5_k::kBytes) {
    quantize_k_affine(layout, x, dst, 31, kSearchQ5K, L);
    layout.quant.store_all(dst, L);
  }
}

// Q6_K: 16 sub-blocks of 16, int8 scales relative to d = max_scale / -128, 6-bit quants.
void quantize_q6_k(const float* x, uint8_t* dst, size_t nblocks) {
  const BlockLayout& layout = *block_layout(GgmlType::Q6_K);
  int8_t L[kQK_K];
  float scales[kSubBlocks16];
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q6_k::kBytes) {
    for (int ib = 0; ib < kSubBlocks16; ++ib)
      scales[ib] = fit_scale_symmetric(q6_k::kSubBlock, q6_k::kOffset, x + 16 * ib, L + 16 * ib);
    const float max_scale = signed_max(kSubBlocks16, scales);
    if (std::fabs(max_scale) < kGroupMaxEps) {
      std::memset(dst, 0, q6_k::kBytes);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    store_f16(dst + q6_k::kD, 1 / iscale);
    for (int ib = 0; ib < kSubBlocks16; ++ib)
      layout.scale.store(dst, ib, std::min(127, nearest_int(iscale * scales[ib])));
    const float d_stored = load_f16(dst + q6_k::kD);
    for (int ib = 0; ib < kSubBlocks16; ++ib) {
      const float d = d_stored * float(layout.scale.read(dst, ib));
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        const int l = std::clamp(nearest_int(x[16 * ib + i] / d), -32, 31);
        L[16 * ib + i] = int8_t(l + q6_k::kOffset);
      }
    }
    layout.quant.store_all(dst, reinterpret_cast<const uint8_t*>(L));  // L: 0..63
  }
}

// Q8_K: d = max / -127 from the signed extreme (f32, may be negative); q = min(127, rne(x/d));
// bsums = sums of 16 consecutive quants.
void quantize_q8_k(const float* x, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, x += kQK_K, dst += q8_k::kBytes) {
    const float max = signed_max(kQK_K, x);
    std::memset(dst, 0, q8_k::kBytes);
    if (max == 0) continue;  // d = 0, quants and sums 0
    const float iscale = -127.0f / max;
    int8_t* qs = reinterpret_cast<int8_t*>(dst + q8_k::kQs);
    for (int j = 0; j < kQK_K; ++j) qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / q8_k::kGroup; ++g) {
      int sum = 0;
      for (int i = 0; i < q8_k::kGroup; ++i) sum += qs[q8_k::kGroup * g + i];
      store_u16(dst + q8_k::kBsums + 2 * g, uint16_t(int16_t(sum)));
    }
    store_u32(dst + q8_k::kD, std::bit_cast<uint32_t>(1 / iscale));
  }
}

}  // namespace ugrad::llm::detail
