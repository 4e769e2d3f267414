// Private: the per-format block kernels behind quantize(). Each handles
// `nblocks` consecutive blocks; sizes are checked by the callers.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

namespace ugrad::llm::detail {

using QuantFn = void (*)(const float* src, uint8_t* dst, size_t nblocks);

// quantize_simple.cpp
void quantize_f32(const float* src, uint8_t* dst, size_t nblocks);
void quantize_f16(const float* src, uint8_t* dst, size_t nblocks);
void quantize_bf16(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q4_0(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q4_1(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q5_0(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q5_1(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q8_0(const float* src, uint8_t* dst, size_t nblocks);
// quantize_k.cpp
void quantize_q2_k(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q3_k(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q4_k(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q5_k(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q6_k(const float* src, uint8_t* dst, size_t nblocks);
void quantize_q8_k(const float* src, uint8_t* dst, size_t nblocks);
// quantize_nonlinear.cpp
void quantize_iq4_nl(const float* src, uint8_t* dst, size_t nblocks);
void quantize_iq4_xs(const float* src, uint8_t* dst, size_t nblocks);
void quantize_mxfp4(const float* src, uint8_t* dst, size_t nblocks);

/// ggml's nearest_int: round half to even via the 1.5 * 2^23 trick (valid for |f| < 2^22).
inline int nearest_int(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f + 12582912.0f);
  return int(bits & 0x007fffffu) - 0x00400000;
}

}  // namespace ugrad::llm::detail
