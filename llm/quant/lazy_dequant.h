// Dequantization as lazy tensor expressions over the raw block bytes. Nothing is expanded at load:
// the expression is fused into whatever consumes it (the generic path dequantizes inside each
// matmul kernel). The arithmetic follows the reference dequantizers in llm/quant/dequantize.h.
#pragma once
#include <vector>

#include "llm/quant/formats.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// True if dequantize_lazy supports the type.
bool can_dequantize_lazy(GgmlType type);
/// A float32 tensor of `shape` whose values are `raw` (a uint8 tensor holding exactly the blocks
/// of numel(shape) elements of `type`, any shape) dequantized. Errors name the type and sizes.
Tensor dequantize_lazy(const Tensor& raw, GgmlType type, const std::vector<int64_t>& shape);

}  // namespace ugrad::llm
