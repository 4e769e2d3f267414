#include "llm/models/qwen3.h"

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {

Qwen3Model::Qwen3Model(const GgufFile& file, int64_t max_context, const std::string& device)
    : ChunkedModel(file, max_context, device, "qwen3") {
  // ModelConfig also reads the qwen35 hybrids, whose layers this model cannot run.
  if (config_.arch != ModelArch::kQwen3 && config_.arch != ModelArch::kQwen3Moe)
    fail("model: architecture {} is not a Qwen3 model", quote(arch_name(config_.arch)));
  for (const LayerWeights& lw : weights_.layers)
    layers_.push_back(Layer{load(lw.attn_norm), load_linears({lw.attn_q, lw.attn_k, lw.attn_v}),
                            load_linear(lw.attn_output), load(lw.attn_q_norm), load(lw.attn_k_norm),
                            load(lw.ffn_norm), load_ffn(lw),
                            KvCache(max_context, config_.n_kv_heads, config_.head_dim, device_)});
}

Tensor Qwen3Model::attention(Layer& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                             const Chunk& chunk) {
  const int64_t n = chunk.rows, heads = config_.n_heads, kv_heads = config_.n_kv_heads,
                hd = config_.head_dim;
  // The projections are materialized (the group's): the norm's reduce and the rotation read them.
  const std::vector<Tensor> qkv = l.qkv(h);
  Tensor q = rms_norm(qkv[0].reshape({n, heads, hd}), l.q_norm, config_.rms_eps);
  Tensor k = rms_norm(qkv[1].reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = qkv[2].reshape({n, kv_heads, hd});
  Tensor out = l.cache.attend(rope(q, cos, sin), rope(k, cos, sin), v, chunk);
  return l.wo(out);
}

std::vector<const KvCache*> Qwen3Model::kv_caches() const {
  std::vector<const KvCache*> caches;
  for (const Layer& l : layers_) caches.push_back(&l.cache);
  return caches;
}

Tensor Qwen3Model::layers(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) {
  for (Layer& l : layers_) {
    x.realize();
    x = x + attention(l, pre_norm(x, l.attn_norm, config_.rms_eps), cos, sin, chunk);
    x.realize();
    x = x + l.ffn(pre_norm(x, l.ffn_norm, config_.rms_eps));
  }
  return x;
}

}  // namespace ugrad::llm
