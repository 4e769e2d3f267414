// Flash attention: the chunk's query rows (one in decode, up to a prefill chunk's 32) against a
// half-precision KV cache, split over positions so a long context fills the GPU, in two
// hand-written kernels (codegen/kernel_builder.h; they also run on the CPU, which is how the
// tests compare them everywhere):
//   split    per 32 positions and KV head, the tile of keys and values read into LDS (16-byte
//            loads, coalesced); scores with the scale and log2(e) folded in, so the softmax is
//            exp2; for each query row and head the split's max m, sum l of exp2(s - m) and the
//            unnormalized weighted sum of the values. Decode: one workgroup per (split, KV head,
//            row), one wave per query head of the group, one lane per position. A chunk of rows:
//            one workgroup per (split, KV head, block of 16-row query tiles), Q K^T and P V on
//            WMMA tiles with q and P in half precision;
//   combine  one workgroup per (query head, row, 32 head dims), a lane per dim: the splits'
//            partials rescaled by exp2(m_s - max m) and normalized (16 splits per step, their
//            loads issued together). In decode 8 waves each take every 8th split and meet in
//            LDS: the few workgroups then still keep a long context's reads in flight.
// Row r sits at position start_pos + r and sees positions <= start_pos + r (causal). The number
// of splits follows start_pos (a kernel variable): a call reads the filled prefix only. A
// position past a row's last is read as that last one and weighted 0, so rows of the cache past
// the valid length (zeros, stale values or NaN) never reach the result; a split wholly past a
// row's last gives that row nothing.
#pragma once
#include <cstdint>

#include "llm/kernels/select.h"
#include "tensor/tensor.h"
#include "uop/uop.h"

namespace ugrad::llm {

/// Positions per split (one per lane of a wave).
inline constexpr int64_t kFlashSplit = 32;

/// What the kernels need for `heads` query heads over `kv_heads` KV heads of `head_dim` (none:
/// a shape they do not take).
std::optional<KernelNeeds> flash_attention_needs(int64_t heads, int64_t kv_heads, int64_t head_dim);

/// The kernels' ASTs for `rows` query rows of the shape, caches of `capacity` positions and the
/// variable start_pos in [0, max_pos] (max_pos + rows <= capacity; cached by name), for a device
/// of features `f` (a chunk of rows takes WMMA tiles where `f` has them and their LDS fits).
UOp flash_attention_split_kernel(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                 int64_t capacity, int64_t max_pos, const DeviceFeatures& f);
UOp flash_attention_combine_kernel(int64_t rows, int64_t heads, int64_t head_dim, int64_t capacity,
                                   int64_t max_pos);

/// Whether the kernels read q in half precision (a chunk of rows on WMMA tiles): flash_attention()
/// casts q then, and a caller that materializes q anyway can do so in half precision.
bool flash_attention_half_query(int64_t rows, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                const DeviceFeatures& f);

/// Attention of q (rows, heads, head_dim) float32 or float16 at positions start_pos + [0, rows)
/// (the bound variable "start_pos", whose range lies inside the cache) over the caches (kv_heads,
/// capacity, head_dim) float16, which hold the rows' own keys and values already: (rows, heads *
/// head_dim), as llm/kernels/attention.h's attention().
Tensor flash_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                       const UOp& start_pos);

}  // namespace ugrad::llm
