// Dequantization as lazy tensor expressions over the raw block bytes. Nothing is expanded at load:
// the expression is fused into whatever consumes it (the generic path dequantizes inside each
// matmul kernel). The arithmetic follows the reference dequantizers in llm/quant/dequantize.h.
#pragma once
#include <vector>

#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// True if dequantize_lazy supports the type.
bool can_dequantize_lazy(GgmlType type);
/// A float32 tensor of `shape` whose values are `raw` (a uint8 tensor holding exactly the blocks
/// of numel(shape) elements of `type`, any shape) dequantized. Errors name the type and sizes.
Tensor dequantize_lazy(const Tensor& raw, GgmlType type, const std::vector<int64_t>& shape);

/// x times the transpose of a Q4_K (out, in) weight, (rows, out), as int8 dot products (DOT4) of
/// x's levels with the 4-bit quants, 4 per 32-bit word, scaled per sub-block: the lazy form for
/// CPUs with int8 dot products. `raw` holds the blocks as uint8, `words` the same memory as
/// uint32; errors name the sizes.
Tensor q4_k_linear_int8(const Int8Rows& x, const Tensor& raw, const Tensor& words, int64_t out,
                        int64_t in);

}  // namespace ugrad::llm
