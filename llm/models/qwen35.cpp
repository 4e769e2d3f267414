#include "llm/models/qwen35.h"

#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {

namespace {

constexpr double kSoftplusLinear = 20.0;  // softplus(x) = x beyond this (as torch and llama.cpp)

// x / max(||x||_2, eps) over the last axis (ggml_l2_norm).
Tensor l2_norm(const Tensor& x, float eps) {
  return x * maximum(x.square().sum({-1}, true).sqrt(), eps).reciprocal();
}

Tensor softplus(const Tensor& x) { return (x > kSoftplusLinear).where(x, (x.exp() + 1).log()); }

}  // namespace

Qwen35Model::Qwen35Model(const GgufFile& file, int64_t max_context, const std::string& device)
    : ChunkedModel(file, max_context, device, "qwen35") {
  if (config_.arch != ModelArch::kQwen35 && config_.arch != ModelArch::kQwen35Moe)
    fail("model: architecture {} is not a Qwen3.5 model", quote(arch_name(config_.arch)));
  const HybridConfig& hc = *config_.hybrid;
  if (hc.conv_kernel < 2)
    fail("model: a conv kernel of {} taps is not supported (at least 2)", hc.conv_kernel);
  for (uint32_t i = 0; i < config_.n_layers; ++i) {
    const LayerWeights& lw = weights_.layers[i];
    Layer l;
    l.attn_norm = load(lw.attn_norm);
    l.ffn_norm = load(lw.ffn_norm);
    l.ffn = load_ffn(lw);
    if (config_.is_recurrent(i)) {
      const int64_t taps = hc.conv_kernel, hv = hc.n_value_heads;
      DeltaNet& d = l.gdn.emplace();
      d.in = load_linears({lw.attn_qkv, lw.attn_gate, lw.ssm_beta, lw.ssm_alpha});
      d.conv = load(lw.ssm_conv1d);
      d.dt_bias = load(lw.ssm_dt);
      d.a = load(lw.ssm_a);
      d.norm = load(lw.ssm_norm);
      d.w_out = load_linear(lw.ssm_out);
      // Left as allocated: position 0 reads them as zeros.
      d.conv_state = Tensor::empty({taps - 1, hc.conv_dim()}, dtypes::float32, device_);
      d.state = Tensor::empty({hv, hc.value_head_dim(), hc.key_head_dim}, dtypes::float32, device_);
      Tensor states[] = {d.conv_state, d.state};
      Tensor::realize_all(states);
    } else {
      l.attn = Attention{load_linears({lw.attn_q, lw.attn_k, lw.attn_v}),
                         load_linear(lw.attn_output), load(lw.attn_q_norm), load(lw.attn_k_norm),
                         KvCache(max_context, config_.n_kv_heads, config_.head_dim, device_)};
    }
    layers_.push_back(std::move(l));
  }
}

const Qwen35Model::DeltaNet& Qwen35Model::delta_net_layer(uint32_t layer) const {
  if (layer >= layers_.size() || !layers_[layer].gdn)
    fail("qwen35: layer {} is not a Gated DeltaNet layer", layer);
  return *layers_[layer].gdn;
}

const Tensor& Qwen35Model::conv_state(uint32_t layer) const {
  return delta_net_layer(layer).conv_state;
}

const Tensor& Qwen35Model::recurrent_state(uint32_t layer) const {
  return delta_net_layer(layer).state;
}

// out = Wo (attend(rope(norm(q)), rope(norm(k)), v) * sigmoid(gate)), [q_h | gate_h] per head.
Tensor Qwen35Model::attention(Attention& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                              const Chunk& chunk) {
  const int64_t n = chunk.rows, heads = config_.n_heads, kv_heads = config_.n_kv_heads,
                hd = config_.head_dim;
  // The projections are materialized (the group's): the norm's reduce, the rotation and the gate
  // read them.
  const std::vector<Tensor> qkv = l.qkv(h);
  Tensor qg = qkv[0].reshape({n, heads, 2 * hd});
  Tensor q = rms_norm(qg.shrink({{0, n}, {0, heads}, {0, hd}}), l.q_norm, config_.rms_eps);
  Tensor gate = qg.shrink({{0, n}, {0, heads}, {hd, 2 * hd}}).reshape({n, heads * hd});
  Tensor k = rms_norm(qkv[1].reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = qkv[2].reshape({n, kv_heads, hd});
  Tensor out = l.cache.attend(rope(q, cos, sin), rope(k, cos, sin), v, chunk);
  return l.wo(out * gate.sigmoid());  // the linear materializes it or fuses it into x's int8 form
}

// Gated DeltaNet (docs/qwen.md#gated-deltanet) over the chunk's rows; padded rows get beta = 0
// and decay = 1.
Tensor Qwen35Model::delta_net(DeltaNet& l, const Tensor& h, const Chunk& chunk) {
  const HybridConfig& hc = *config_.hybrid;
  const int64_t n = chunk.rows, taps = hc.conv_kernel, cd = hc.conv_dim(), kd = hc.key_dim(),
                hk = hc.n_key_heads, hv = hc.n_value_heads, dk = hc.key_head_dim,
                dv = hc.value_head_dim();
  const float eps = config_.rms_eps;
  // The conv window: the previous taps-1 inputs (zeros at position 0: a new sequence), then this
  // chunk's rows. The projections are materialized (the group's): fused into the concatenation
  // the conv input's kernel is ~3x slower.
  const std::vector<Tensor> in = l.in(h);
  const Tensor continues = Tensor::from_dim(chunk.start_pos, device_).gt(0);
  Tensor window = cat({continues.where(l.conv_state, 0.0), in[0]}, 0);
  window.realize();
  // The next conv state: the last taps-1 real inputs (padded rows come after them).
  const UOp& len = chunk.len;
  l.conv_state.assign(window.shrink_to({{len, len + (taps - 1)}, {dim(0), dim(cd)}})).realize();
  // Causal depthwise conv: tap taps-1 multiplies the current row.
  Tensor taps_t = l.conv.transpose();  // (taps, conv_dim)
  Tensor conv;
  for (int64_t i = 0; i < taps; ++i) {
    Tensor term = window.shrink({{i, i + n}, {0, cd}}) * taps_t.shrink({{i, i + 1}, {0, cd}});
    conv = i == 0 ? term : conv + term;
  }
  Tensor c = conv.silu();
  auto heads = [&](int64_t lo, int64_t count, int64_t d) {
    return c.shrink({{0, n}, {lo, lo + count * d}}).reshape({n, count, d});
  };
  // Value head j reads key head j mod H_k (the tiled order of qwen35 GGUFs,
  // docs/qwen.md#converter-transformations).
  const int64_t tiles = hv / hk;
  Tensor q = (l2_norm(heads(0, hk, dk), eps) * (1.0 / std::sqrt(static_cast<double>(dk))))
                 .repeat({1, tiles, 1});
  Tensor k = l2_norm(heads(kd, hk, dk), eps).repeat({1, tiles, 1});
  Tensor v = heads(2 * kd, hv, dv);
  Tensor beta = in[2].sigmoid();                         // (n, H_v)
  Tensor log_decay = softplus(in[3] + l.dt_bias) * l.a;  // ssm_a < 0
  if (n > 1) {
    Tensor real = Tensor::arange(n, dtypes::int32, device_)
                      .lt(Tensor::from_dim(len, device_))
                      .reshape({n, 1});
    beta = real.where(beta, 0.0);
    log_decay = real.where(log_decay, 0.0);
  }
  Tensor y = gated_delta_rule(l.state, q, k, v, beta, log_decay, chunk.start_pos);  // (n, H_v, d_v)
  Tensor z = in[1].reshape({n, hv, dv});
  // The projection's x: the linear materializes it or fuses it into x's int8 form.
  Tensor gated = (rms_norm(y, l.norm, eps) * z.silu()).reshape({n, hv * dv});
  return l.w_out(gated);
}

std::vector<const KvCache*> Qwen35Model::kv_caches() const {
  std::vector<const KvCache*> caches;
  for (const Layer& l : layers_)
    if (l.attn) caches.push_back(&l.attn->cache);
  return caches;
}

// The whole network for a chunk of embedded tokens: the logits of the last real one, (1, vocab).
Tensor Qwen35Model::layers(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) {
  for (Layer& l : layers_) {
    x.realize();
    Tensor h = pre_norm(x, l.attn_norm, config_.rms_eps);
    x = x + (l.gdn ? delta_net(*l.gdn, h, chunk) : attention(*l.attn, h, cos, sin, chunk));
    x.realize();
    x = x + l.ffn(pre_norm(x, l.ffn_norm, config_.rms_eps));
  }
  return x;
}

}  // namespace ugrad::llm
