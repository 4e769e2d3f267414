#include "llm/kernels/attention.h"

#include <cmath>

#include "llm/kernels/flash_attention.h"
#include "runtime/device_features.h"
#include "uop/shape.h"

namespace ugrad::llm {

namespace {

// On a GPU: the flash-attention kernels (LLM_KERNELS=0: the generic path).
bool flash(const Tensor& q, const Tensor& k_cache) {
  return select(device_features(q.device()),
                flash_attention_needs(q.size(1), k_cache.size(0), k_cache.size(2)));
}

}  // namespace

Tensor attention_query(const Tensor& q, const Tensor& k_cache, const Chunk& chunk) {
  const bool half =
      flash(q, k_cache) && flash_attention_half_query(chunk.rows, q.size(1), k_cache.size(0),
                                                      k_cache.size(2), device_features(q.device()));
  return half ? q.cast(dtypes::float16) : q;
}

Tensor attention(const Tensor& q_in, const Tensor& k_cache, const Tensor& v_cache,
                 const Chunk& chunk) {
  const int64_t n = chunk.rows, heads = q_in.size(1), kvh = k_cache.size(0), hd = k_cache.size(2);
  const int64_t group = heads / kvh;
  const UOp& sp = chunk.start_pos;
  const std::string& device = q_in.device();
  if (flash(q_in, k_cache)) return flash_attention(q_in, k_cache, v_cache, sp);
  const Tensor q = q_in.cast(dtypes::float32);
  auto at = [&](const Tensor& cache, const UOp& lo, const UOp& hi) {
    return cache.shrink_to({{dim(0), dim(kvh)}, {lo, hi}, {dim(0), dim(hd)}});
  };
  // Keys [0, start_pos + rows): a symbolic length, so a step reads only the filled prefix.
  Tensor keys = at(k_cache, dim(0), sp + n).cast(dtypes::float32);  // (kvh, L, hd)
  Tensor values = at(v_cache, dim(0), sp + n).cast(dtypes::float32);
  Tensor qg = q.reshape({n, kvh, group, hd}).permute({1, 2, 0, 3});  // (kvh, group, n, hd)
  // (kvh, group, n, L): the scheduler buffers the product, read by the softmax's reduces.
  Tensor scores =
      qg.matmul(keys.unsqueeze(1).transpose()) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor query_pos =
      (Tensor::from_dim(sp, device) + Tensor::arange(n, dtypes::int32, device)).reshape({n, 1});
  Tensor key_pos = Tensor::arange(k_cache.size(1), dtypes::int32, device)
                       .shrink_to({{dim(0), sp + n}})
                       .reshape_to({dim(1), sp + n});
  Tensor mask = key_pos.le(query_pos).where(0.0, -INFINITY);  // (n, L)
  // Materialized: fused into the weighted sum of values, exp() would run once per value dim
  // (measured: 2 kernels fewer a step, a small model's 256-token prefill ~7% slower).
  Tensor probs = (scores + mask).softmax(-1).contiguous();
  // Materialized in its own layout: a consumer fused in (the qwen35 output gate) would cost the
  // matmul its opts, and so would writing it transposed (measured: the same kernels, ~10% slower).
  Tensor out = probs.matmul(values.unsqueeze(1)).contiguous();
  return out.permute({2, 0, 1, 3}).reshape({n, heads * hd});  // (kvh, group, n, hd) -> (n, ...)
}

}  // namespace ugrad::llm
