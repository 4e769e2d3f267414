// Causal grouped-query attention over a half-precision KV cache: the one function the models
// call for it, on any device.
#pragma once
#include "llm/kernels/chunk.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Attention of the chunk's queries q (rows, heads, head_dim; float32, or as attention_query()
/// gives it) over the cached keys and values
/// (kv_heads, capacity, head_dim, float16) of positions [0, start_pos + rows), which hold the
/// chunk's own keys and values already: query i sits at start_pos + i and sees the keys at
/// positions <= start_pos + i; heads share a key-value head in groups of heads / kv_heads.
/// Rows of the cache past start_pos + rows are never read. Returns (rows, heads * head_dim).
/// On a GPU it runs the flash-attention kernels (flash_attention.h), unless LLM_KERNELS=0.
Tensor attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Chunk& chunk);

/// q (float32) in the dtype attention() reads it in: a caller that materializes q before the call
/// materializes this (half precision where the kernels round q to it anyway).
Tensor attention_query(const Tensor& q, const Tensor& k_cache, const Chunk& chunk);

}  // namespace ugrad::llm
