// Dequantizers of the element-wise float types and the legacy 32-element block formats.
#include <cstring>

#include "llm/quant/blocks.h"
#include "llm/quant/kernels_impl.h"

namespace ugrad::llm::detail {
namespace {
constexpr int kHalf = kQK / 2;  // legacy formats pack element j and j+16 into one byte
}

void dequantize_f32(const uint8_t* src, float* dst, size_t n) {
  std::memcpy(dst, src, n * sizeof(float));  // little-endian host, as the rest of ugrad assumes
}

void dequantize_f16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}

void dequantize_bf16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(load_u16(src + 2 * i));
}

// Q4_0: y[j] = d * (lo(qs[j]) - 8), y[j+16] = d * (hi(qs[j]) - 8).
void dequantize_q4_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q4_0::kBytes, dst += kQK) {
    const float d = load_f16(src + q4_0::kD);
    const uint8_t* qs = src + q4_0::kQs;
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = float((qs[j] & 0xF) - q4_0::kOffset) * d;
      dst[j + kHalf] = float((qs[j] >> 4) - q4_0::kOffset) * d;
    }
  }
}

// Q4_1: y = d * q + m.
void dequantize_q4_1(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q4_1::kBytes, dst += kQK) {
    const float d = load_f16(src + q4_1::kD);
    const float m = load_f16(src + q4_1::kM);
    const uint8_t* qs = src + q4_1::kQs;
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = float(qs[j] & 0xF) * d + m;
      dst[j + kHalf] = float(qs[j] >> 4) * d + m;
    }
  }
}

// Q5_0: q = nibble | (bit e of qh) << 4; y = d * (q - 16).
void dequantize_q5_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q5_0::kBytes, dst += kQK) {
    const float d = load_f16(src + q5_0::kD);
    const uint32_t qh = load_u32(src + q5_0::kQh);
    const uint8_t* qs = src + q5_0::kQs;
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = (qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
      const int q1 = (qs[j] >> 4) | int(((qh >> (j + kHalf)) & 1) << 4);
      dst[j] = float(q0 - q5_0::kOffset) * d;
      dst[j + kHalf] = float(q1 - q5_0::kOffset) * d;
    }
  }
}

// Q5_1: q as Q5_0; y = d * q + m.
void dequantize_q5_1(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q5_1::kBytes, dst += kQK) {
    const float d = load_f16(src + q5_1::kD);
    const float m = load_f16(src + q5_1::kM);
    const uint32_t qh = load_u32(src + q5_1::kQh);
    const uint8_t* qs = src + q5_1::kQs;
    for (int j = 0; j < kHalf; ++j) {
      const int q0 = (qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
      const int q1 = (qs[j] >> 4) | int(((qh >> (j + kHalf)) & 1) << 4);
      dst[j] = float(q0) * d + m;
      dst[j + kHalf] = float(q1) * d + m;
    }
  }
}

// Q8_0: y = d * q.
void dequantize_q8_0(const uint8_t* src, float* dst, size_t nblocks) {
  for (size_t b = 0; b < nblocks; ++b, src += q8_0::kBytes, dst += kQK) {
    const float d = load_f16(src + q8_0::kD);
    const int8_t* qs = reinterpret_cast<const int8_t*>(src + q8_0::kQs);
    for (int j = 0; j < kQK; ++j) dst[j] = float(qs[j]) * d;
  }
}

}  // namespace ugrad::llm::detail
