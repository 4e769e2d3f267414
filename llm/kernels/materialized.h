// A tensor in a buffer of its own, without a copy where it is one already.
#pragma once
#include "tensor/tensor.h"

namespace ugrad::llm {

/// `y` in a buffer of its own: `y` itself where it is one already (a realized buffer, a
/// hand-written kernel's output, a CONTIGUOUS, or a reshape of one), else y.contiguous(), its own
/// kernel. For an operand a GEMM reads (fused into it an expression is recomputed per output
/// column, and the GEMM loses its register tiling) and products a consumer would fuse.
Tensor materialized(const Tensor& y);

}  // namespace ugrad::llm
