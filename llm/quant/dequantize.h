// Reference (scalar) dequantizers: raw ggml blocks -> float. One per format, registered in one
// table keyed by GgmlType; the arithmetic follows ggml's dequantize_row_* in the same float order,
// so results are bit-identical to ggml's reference path.
#pragma once
#include <cstdint>
#include <span>

#include "llm/quant/formats.h"

namespace ugrad::llm {

/// True if dequantize() supports type t.
bool can_dequantize(GgmlType t);

/// Decodes dst.size() elements of type t from src. Error if t is unsupported, dst.size() is not a
/// multiple of the block size, or src does not hold exactly row_bytes(t, dst.size()) bytes.
void dequantize(GgmlType t, std::span<const uint8_t> src, std::span<float> dst);

}  // namespace ugrad::llm
