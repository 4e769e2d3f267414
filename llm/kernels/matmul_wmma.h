// The prefill kernel of a quantized linear layer: a padded chunk of up to 32 rows of activations
// in f16 times the transpose of a quantized (out, in) weight on RDNA3's WMMA 16x16x16 tiles. Each
// weight unit (llm/kernels/int8_units.h) is dequantized in registers to f16 just before it enters
// the matrix engine; accumulation is f32.
//
// A workgroup of 16 waves owns a tile of 16 output features and both 16-row tiles of the chunk;
// the waves split the row's units between them and add up their partial sums through LDS at the
// end. Lane l (and l + 16, which gfx11's WMMA wants holding the same inputs) decodes its wave's
// current unit of feature row l % 16; every piece of 16 elements is one B fragment, multiplied
// with the A fragments of the same 16 columns of x (stored tiled, so that an A fragment is two
// 256-byte loads). Each (row tile, piece) keeps its own accumulator, so every WMMA accumulates
// in place.
#pragma once
#include <cstdint>

#include "llm/kernels/select.h"
#include "llm/quant/formats.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Rows of the chunk the kernel computes (x is padded to it).
inline constexpr int64_t kWmmaRows = 32;

/// What the kernel needs for a `type` weight of (out, in) (none: a shape matvec_int8 does not
/// take, or `out` not a multiple of 16).
std::optional<KernelNeeds> matmul_wmma_needs(GgmlType type, int64_t out, int64_t in);

/// The kernel's AST; slots: y (32, out) float32, the weight's bytes as uint32 words, x (32, in)
/// as f16 pairs in uint32 words, tiled (matmul_wmma.cpp), then (IQ4_XS) the level table
/// (unit_table) as uint32.
UOp matmul_wmma_kernel(GgmlType type, int64_t out, int64_t in);

/// x (rows <= 32, in) float32 times the transpose of the (out, in) `type` weight whose bytes are
/// `words`: (rows, out) float32, x rounded to f16 first.
Tensor matmul_wmma(const Tensor& x, const Tensor& words, GgmlType type, int64_t out, int64_t in);

}  // namespace ugrad::llm
