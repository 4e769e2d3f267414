// Activations quantized to int8 for int8 dot products against quantized weights, like ggml's
// Q8_0/Q8_1 activations: per 32 values of a row, scale = max|x| / 127 and q = round(x / scale) in
// [-127, 127] (half away from zero; 0 when the block is all zero). One size for the CPU's DOT4
// path and the GPU's decode kernel, so both compute the same integer dot products. (32 rather
// than ggml's CPU Q8_K's 256: a finer scale rounds an outlier's neighbours less.) A Q4_K linear
// computes with these levels whatever kernel it runs (llm/kernels/linear.h), so every path
// rounds its input the same way.
#pragma once
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Values per activation scale.
inline constexpr int64_t kInt8Block = 32;

/// Rows of activations as int8 levels, packed for DOT4.
struct Int8Rows {
  Tensor words;    // (rows, in/4) int32: 4 int8 levels per word, little-endian
  Tensor scale;    // (rows, in/32) float32: value = scale * level
  Tensor sum32;    // (rows, in/32) float32: scale * the sum of each 32 consecutive levels
  Tensor sum16;    // (rows, in/16) float32: scale * the sum of each 16 consecutive levels
  Tensor scale16;  // (rows, in/16) float32: each 32 values' scale twice, one per 16
  Tensor q;        // (rows, in/32, 32) int32 levels, lazy: for a consumer that orders its own words
};

/// x's levels and scales as lazy expressions over the materialized block maxima, for a consumer
/// that packs them its own way (matmul_int8.h).
struct Int8Levels {
  Tensor q;      // (rows, in/32, 32) int32 in [-127, 127]
  Tensor scale;  // (rows, in/32, 1) float32
};
/// x (rows, in) float32, `in` a multiple of 32, as levels; an Error names any other shape.
Int8Levels int8_levels(const Tensor& x);
/// Levels (..., 4) int32 as one word of their bytes, little-endian: (..., 1) uint32 (a sum of
/// shifted bytes, elementwise).
Tensor level_words(const Tensor& q);
/// x (rows, in) float32, `in` a multiple of 32, quantized and packed.
Int8Rows quantize_rows_int8(const Tensor& x);
/// x (rows, in) float32 rounded to its int8 levels: scale * level, as float32.
Tensor round_rows_int8(const Tensor& x);

}  // namespace ugrad::llm
