// The gated delta rule of Qwen3.5's Gated DeltaNet layers (docs/qwen.md#gated-deltanet): the one
// function the models call for it, on any device.
#pragma once
#include "tensor/tensor.h"
#include "uop/uop.h"

namespace ugrad::llm {

/// The gated delta rule (docs/qwen.md#gated-deltanet) over the rows of a chunk, per value head:
///   M <- decay M;  u = M k;  M <- M + beta (v - u) (x) k;  out = M q
/// row after row, with decay = exp(log_decay). `state` is M for every head, (heads, d_v, d_k)
/// float32, a realized buffer: read (as zeros when start_pos, the chunk's bound variable, is 0:
/// a new sequence), then overwritten with the state after the last row. q and
/// k are (rows, heads, d_k), already mapped to value heads (and q scaled), v (rows, heads, d_v),
/// beta and log_decay (rows, heads). Returns the realized outputs (rows, heads, d_v). One row is
/// one step; more run at once in the chunked (WY) form. A row with beta = 0 and log_decay = 0 is
/// padding: a single one leaves M bit for bit as it was, and in a chunk neither M nor the other
/// rows' outputs depend on its q, k and v. On a GPU (unless LLM_KERNELS=0) the rows run as one
/// fused kernel (delta_scan.h).
Tensor gated_delta_rule(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& beta, const Tensor& log_decay, const UOp& start_pos);

}  // namespace ugrad::llm
