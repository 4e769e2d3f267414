// Flash-decode attention: one query row per head against a half-precision KV cache, split over
// positions so a long context fills the GPU, in two hand-written kernels (codegen/kernel_builder.h;
// they also run on the CPU, which is how the tests compare them everywhere):
//   split    one workgroup per (KV head, 32 positions): the tile of keys and values is read
//            once into LDS (16-byte loads, coalesced), one wave per query head of the group
//            scores its 32 positions (one per lane, the scale and log2(e) folded in, so the
//            softmax is exp2), and writes the split's max m, sum l of exp2(s - m) and the
//            unnormalized weighted sum of the values;
//   combine  one workgroup per query head, one work-item per head dimension: the splits'
//            partials rescaled by exp2(m_s - max m) and normalized.
// The number of splits follows start_pos (a kernel variable): a step reads the filled prefix
// only. Positions past start_pos are read as the last valid one and weighted 0, so rows of the
// cache past the valid length (zeros, stale values or NaN) never reach the result.
#pragma once
#include <cstdint>

#include "tensor/tensor.h"
#include "uop/uop.h"

namespace ugrad::llm {

/// Positions per split (one per lane of a wave).
inline constexpr int64_t kDecodeSplit = 32;

/// Whether the kernels take `heads` query heads over `kv_heads` KV heads of `head_dim`.
bool attention_decode_supports(int64_t heads, int64_t kv_heads, int64_t head_dim);

/// The kernels' ASTs for the shape, caches of `capacity` positions and the variable start_pos
/// in [0, max_pos] (cached by name).
UOp attention_decode_split_kernel(int64_t heads, int64_t kv_heads, int64_t head_dim,
                                  int64_t capacity, int64_t max_pos);
UOp attention_decode_combine_kernel(int64_t heads, int64_t head_dim, int64_t capacity,
                                    int64_t max_pos);

/// Attention of q (1, heads, head_dim) float32 at position start_pos (the bound variable
/// "start_pos", whose range lies inside the cache) over the
/// caches (kv_heads, capacity, head_dim) float16 of positions [0, start_pos]: (1, heads *
/// head_dim), as llm/kernels/attention.h's attention() for one row.
Tensor attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                        const UOp& start_pos);

}  // namespace ugrad::llm
