// A tensor in a buffer of its own, without a copy where it is one already.
#pragma once
#include "tensor/tensor.h"

namespace ugrad::llm {

/// `y` in a buffer of its own: `y` itself where it is one already (a hand-written kernel's output,
/// a CONTIGUOUS, or a reshape of either), else y.contiguous(), its own kernel. The models use it
/// for products a consumer would fuse (SiLU(gate) * up, the conv window, a norm): fused, a GEMM
/// loses its matmul optimizations.
Tensor materialized(const Tensor& y);

}  // namespace ugrad::llm
