// Quantizers of the element-wise float types and the legacy 32-element formats, following
// ggml's quantize_row_*_ref (fp32 scale, quants from its reciprocal; fp16 only for storage).
#include <cmath>
#include <cstring>
#include <limits>

#include "llm/quant/blocks.h"
#include "llm/quant/kernels_impl.h"
#include "llm/quant/layout.h"

namespace ugrad::llm::detail {
namespace {

// The element of largest |x| with its sign (the first one on ties), as ggml's amax/max scan.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* lo, float* hi) {
  *lo = std::numeric_limits<float>::max();
  *hi = -std::numeric_limits<float>::max();
  for (int j = 0; j < n; ++j) {
    if (x[j] < *lo) *lo = x[j];
    if (x[j] > *hi) *hi = x[j];
  }
}

}  // namespace

void quantize_f32(const float* src, uint8_t* dst, size_t n) {
  std::memcpy(dst, src, n * sizeof(float));
}

void quantize_f16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_u16(dst + 2 * i, float_to_half(src[i]));
}

void quantize_bf16(const float* src, uint8_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) store_u16(dst + 2 * i, float_to_bf16(src[i]));
}

// Q4_0: d = max / -8 (the signed extreme maps to q = 0); q = min(15, trunc(x/d + 8.5)).
void quantize_q4_0(const float* x, uint8_t* dst, size_t nblocks) {
  const Field& quant = block_layout(GgmlType::Q4_0)->quant;
  uint8_t q[kQK];
  for (size_t b = 0; b < nblocks; ++b, x += kQK, dst += q4_0::kBytes) {
    const float d = signed_absmax(x, kQK) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst + q4_0::kD, d);
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(15, int(int8_t(x[j] * id + 8.5f))));
    quant.store_all(dst, q);
  }
}

namespace {
// Q4_1 and Q5_1: d = (max - min) / nmax, m = min; q = trunc((x - min)/d + 0.5) (clamped to 15
// for Q4_1, as ggml).
void quantize_affine(GgmlType t, int nmax, const float* x, uint8_t* dst, size_t nblocks) {
  const BlockLayout& l = *block_layout(t);
  const size_t bytes = format_of(t).block_bytes;
  uint8_t q[kQK];
  for (size_t b = 0; b < nblocks; ++b, x += kQK, dst += bytes) {
    float lo, hi;
    min_max(x, kQK, &lo, &hi);
    const float d = (hi - lo) / float(nmax);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst + l.d, d);
    store_f16(dst + l.m, lo);
    for (int j = 0; j < kQK; ++j) {
      const int v = uint8_t(int8_t((x[j] - lo) * id + 0.5f));
      q[j] = uint8_t(nmax == 15 ? std::min(15, v) : v);
    }
    l.quant.store_all(dst, q);
  }
}
}  // namespace

void quantize_q4_1(const float* x, uint8_t* dst, size_t n) {
  quantize_affine(GgmlType::Q4_1, 15, x, dst, n);
}
void quantize_q5_1(const float* x, uint8_t* dst, size_t n) {
  quantize_affine(GgmlType::Q5_1, 31, x, dst, n);
}

// Q5_0: d = max / -16; q = min(31, trunc(x/d + 16.5)).
void quantize_q5_0(const float* x, uint8_t* dst, size_t nblocks) {
  const Field& quant = block_layout(GgmlType::Q5_0)->quant;
  uint8_t q[kQK];
  for (size_t b = 0; b < nblocks; ++b, x += kQK, dst += q5_0::kBytes) {
    const float d = signed_absmax(x, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst + q5_0::kD, d);
    for (int j = 0; j < kQK; ++j) q[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
    quant.store_all(dst, q);
  }
}

// Q8_0: d = max|x| / 127; q = roundf(x/d) (half away from zero).
void quantize_q8_0(const float* x, uint8_t* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, x += kQK, dst += q8_0::kBytes) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_f16(dst + q8_0::kD, d);
    for (int j = 0; j < kQK; ++j) dst[q8_0::kQs + j] = uint8_t(int8_t(std::round(x[j] * id)));
  }
}

}  // namespace ugrad::llm::detail
