// Quantizers: float -> ggml blocks, following ggml's reference algorithms without an importance
// matrix (the path llama-quantize takes with no imatrix), so blocks come out byte-identical.
// One per format, registered in one table keyed by GgmlType.
#pragma once
#include <cstdint>
#include <span>

#include "llm/quant/formats.h"

namespace ugrad::llm {

/// True if quantize() supports type t.
bool can_quantize(GgmlType t);

/// Encodes src as type t into dst. Error if t is unsupported, src.size() is not a multiple of the
/// block size, dst does not hold exactly row_bytes(t, src.size()) bytes, or (for the block-scaled
/// formats, which ggml leaves undefined there) src holds a NaN or an infinity.
/// F32/F16/BF16 convert element-wise (round to nearest even) and keep NaN and infinities.
void quantize(GgmlType t, std::span<const float> src, std::span<uint8_t> dst);

}  // namespace ugrad::llm
