// Building blocks the Qwen models share, on the tensor API: weights over their GGUF bytes, RMSNorm,
// NEOX RoPE, the SwiGLU FFN and the half-precision KV cache. A forward call runs a Chunk
// (llm/kernels/chunk.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "llm/gguf/gguf.h"
#include "llm/kernels/chunk.h"
#include "llm/kernels/linear.h"
#include "llm/models/moe.h"
#include "runtime/allocator.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// x / sqrt(mean(x^2) + eps) * w over the last axis.
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps);
/// rms_norm materialized, for the input of linears: fused into a matmul the norm would be
/// recomputed for every output column (a 32-row Q8_0 projection ran at 56 GFLOP/s fused, 140
/// materialized). A Linear now materializes its own float x, and dense models measured the same
/// without it; a mixture of experts' router and generic expert products still read it per column.
Tensor pre_norm(const Tensor& x, const Tensor& w, float eps);

/// NEOX RoPE on the first 2 * cos.size(-1) dims of each head of x (rows, heads, head_dim):
/// (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) on the two halves; the rest passes through.
/// cos and sin are (rows, 1, n_rot / 2).
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);

/// The cos and sin tables of positions [start_pos, start_pos + rows) for `n_rot` rotated dims
/// of base `theta`, computed on the host: two (rows, 1, n_rot / 2) float32 tensors.
std::pair<Tensor, Tensor> rope_tables(int64_t start_pos, int64_t rows, int64_t n_rot, float theta,
                                      const std::string& device);

/// down(silu(gate(h)) * up(h)), gate and up a group of two.
Tensor swiglu(const Tensor& h, const LinearGroup& gate_up, const Linear& down);

/// A layer's FFN: dense SwiGLU, or the MoE FFN (qwen3moe, qwen35moe).
struct FeedForward {
  LinearGroup gate_up;
  Linear down;
  std::optional<MoeWeights> moe;
  /// (rows, dim) -> (rows, dim).
  Tensor operator()(const Tensor& h) const {
    return moe ? moe_ffn(*moe, h) : swiglu(h, gate_up, down);
  }
};

/// One layer's keys and values in float16.
class KvCache {
 public:
  KvCache(int64_t max_context, int64_t kv_heads, int64_t head_dim, const std::string& device);
  /// Writes k and v (rows, kv_heads, head_dim) at the chunk's positions, then returns causal
  /// grouped-query attention of q (rows, heads, head_dim) over every cached position up to each
  /// query's own: (rows, heads * head_dim). Padded rows write rows past the real ones, which the
  /// next call overwrites before any real query can see them.
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const Chunk& chunk);
  /// The positions it holds: max_context + kMaxChunk - 1 (a chunk's padding rows included).
  int64_t positions() const { return positions_; }
  /// Appends the host bytes of positions [from, to) of every head's keys and values to `ranges`
  /// and their buffers to `owners`, for prefault_async (base/huge_pages.h); nothing where the
  /// cache is not in host memory.
  void host_ranges(int64_t from, int64_t to, std::vector<std::span<std::byte>>& ranges,
                   std::vector<BufferRef>& owners) const;

 private:
  int64_t kv_heads_, head_dim_, positions_;
  Tensor k_, v_;
};

/// Embedding rows of `tokens` dequantized on the host (only the rows needed), padded with zero
/// rows to `rows`: (rows, dim) float32 on `device`. An Error names a token outside the table.
Tensor embed_rows(const GgufTensor& table, std::span<const int32_t> tokens, int64_t rows,
                  const std::string& device);

}  // namespace ugrad::llm
