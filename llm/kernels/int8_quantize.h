// Activations quantized to int8 on the device, once per input (llm/quant/int8_rows.h defines the
// levels): on a GPU one hand-written kernel, a lane per 32 values (their max, the 32 levels packed
// in 8 words, the scale), instead of the tensor path's three (the max, the words, the scale).
#pragma once
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// The kernel's AST for x (rows, in) float32, in a multiple of 32; slots: words (rows, in/4)
/// int32, scale (rows, in/32) float32, x.
UOp int8_quantize_kernel(int64_t rows, int64_t in);

/// x (rows, in) quantized as quantize_rows_int8 does (words and scale; no sums): the kernel on a
/// GPU (unless LLM_KERNELS=0), the tensor path elsewhere. The linears that read one input share
/// its result (LinearGroup, ExpertLinears).
Int8Rows int8_quantize(const Tensor& x);

}  // namespace ugrad::llm
