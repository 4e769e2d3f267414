#include "llm/models/qwen35.h"

#include <cmath>

#include <fmt/format.h>

#include "runtime/jit.h"
#include "uop/error.h"

namespace ugrad::llm {

namespace {

constexpr double kSoftplusLinear = 20.0;  // softplus(x) = x beyond this (as torch and llama.cpp)

// Row t of x (rows, ...): the remaining dims.
Tensor row(const Tensor& x, int64_t t) {
  std::vector<std::pair<int64_t, int64_t>> ranges{{t, t + 1}};
  std::vector<int64_t> rest;
  for (int64_t d = 1; d < x.ndim(); ++d) {
    ranges.emplace_back(0, x.size(d));
    rest.push_back(x.size(d));
  }
  return x.shrink(ranges).reshape(rest);
}

// x / max(||x||_2, eps) over the last axis (ggml_l2_norm).
Tensor l2_norm(const Tensor& x, float eps) {
  return x * maximum(x.square().sum({-1}, true).sqrt(), eps).reciprocal();
}

Tensor softplus(const Tensor& x) { return (x > kSoftplusLinear).where(x, (x.exp() + 1).log()); }

// down(silu(gate(h)) * up(h)) with each projection materialized, so that each is a plain matmul
// kernel with the matmul optimizations (fused, the two share one unoptimized kernel: ~10x slower
// at 32 rows). NOTE: layers.cpp's swiglu fuses them; it moves test_qwen3's chunked-vs-token
// bound (1e-5) to 1.05e-5, so the change waits for its owner.
Tensor ffn(const Tensor& h, const Tensor& gate, const Tensor& up, const Tensor& down) {
  Tensor g = h.linear(gate).contiguous(), u = h.linear(up).contiguous();
  return (g.silu() * u).contiguous().linear(down);
}

}  // namespace

Tensor gated_delta_rule(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& beta, const Tensor& decay, const VarVals& var_vals) {
  const int64_t n = q.size(0), heads = q.size(1), dk = q.size(2), dv = v.size(2);
  // Every step reads one row of these: computed once.
  Tensor in[] = {stack({k, q}, 2).contiguous(), v.contiguous(), beta.contiguous(),
                 decay.contiguous(), (q * k).sum({-1}).contiguous()};
  Tensor::realize_all(in, var_vals);
  const Tensor &kq = in[0], &vs = in[1], &betas = in[2], &decays = in[3], &qk = in[4];
  // [M' k | M' q] of row t with M' = decay M: (heads, d_v, 2).
  auto project = [&](const Tensor& m, int64_t t) {
    Tensor decayed = m * row(decays, t).reshape({heads, 1, 1});
    return (decayed.unsqueeze(2) * row(kq, t).unsqueeze(1)).sum({-1});
  };
  // beta (v - M' k): (heads, d_v).
  auto delta = [&](const Tensor& proj, int64_t t) {
    Tensor u = proj.shrink({{0, heads}, {0, dv}, {0, 1}}).reshape({heads, dv});
    return row(betas, t).reshape({heads, 1}) * (row(vs, t) - u);
  };
  // M' + delta (x) k.
  auto update = [&](const Tensor& m, const Tensor& proj, int64_t t) {
    Tensor k_t = row(kq, t).shrink({{0, heads}, {0, 1}, {0, dk}});  // (heads, 1, d_k)
    return m * row(decays, t).reshape({heads, 1, 1}) + delta(proj, t).reshape({heads, dv, 1}) * k_t;
  };
  Tensor m = state, proj;
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < n; ++t) {
    proj = project(m, t).contiguous();
    // out = M_new q = M' q + delta (k . q)
    Tensor mq = proj.shrink({{0, heads}, {0, dv}, {1, 2}}).reshape({heads, dv});
    outs.push_back(mq + delta(proj, t) * row(qk, t).reshape({heads, 1}));
    if (t + 1 < n) m = update(m, proj, t).contiguous();
  }
  Tensor done[] = {stack(outs, 0), m, proj};
  Tensor::realize_all(done, var_vals);
  // The last row writes the state in place: every element is read and written by one thread,
  // after the projection it needs has been computed from the old state.
  state.assign(update(done[1], done[2], n - 1)).realize(var_vals);
  return done[0];
}

Qwen35Model::Qwen35Model(const GgufFile& file, int64_t max_context, const std::string& device)
    : file_(file),
      config_(ModelConfig::from_gguf(file_)),
      max_context_(max_context),
      device_(device) {
  if (max_context < 1) fail("max context {} must be at least 1", max_context);
  if (config_.arch != ModelArch::kQwen35 && config_.arch != ModelArch::kQwen35Moe) {
    fail("model: architecture '{}' is not supported by the Qwen3.5 model yet",
         arch_name(config_.arch));
  }
  const HybridConfig& hc = *config_.hybrid;
  if (hc.conv_kernel < 2)
    fail("model: a conv kernel of {} taps is not supported (at least 2)", hc.conv_kernel);
  ModelWeights w = ModelWeights::from_gguf(file_, config_);
  token_embd_ = w.token_embd;
  std::shared_ptr<const void> owner = file_.keepalive();
  auto load = [&](const GgufTensor* t) { return load_weight(*t, device_, owner); };
  for (uint32_t i = 0; i < config_.n_layers; ++i) {
    const LayerWeights& lw = w.layers[i];
    Layer l;
    l.attn_norm = load(lw.attn_norm);
    l.ffn_norm = load(lw.ffn_norm);
    if (config_.moe) {
      l.moe = load_moe(lw, config_, device_);
    } else {
      l.w_gate = load(lw.ffn_gate);
      l.w_up = load(lw.ffn_up);
      l.w_down = load(lw.ffn_down);
    }
    if (config_.is_recurrent(i)) {
      const int64_t taps = hc.conv_kernel, hv = hc.n_value_heads;
      DeltaNet& d = l.gdn.emplace();
      d.w_qkv = load(lw.attn_qkv);
      d.w_z = load(lw.attn_gate);
      d.conv = load(lw.ssm_conv1d);
      d.dt_bias = load(lw.ssm_dt);
      d.a = load(lw.ssm_a);
      d.w_beta = load(lw.ssm_beta);
      d.w_alpha = load(lw.ssm_alpha);
      d.norm = load(lw.ssm_norm);
      d.w_out = load(lw.ssm_out);
      d.conv_state =
          Tensor::zeros({taps - 1, hc.conv_dim()}, dtypes::float32, device_).contiguous();
      d.state = Tensor::zeros({hv, hc.value_head_dim(), hc.key_head_dim}, dtypes::float32, device_)
                    .contiguous();
      Tensor states[] = {d.conv_state, d.state};
      Tensor::realize_all(states);
    } else {
      l.attn = Attention{load(lw.attn_q),
                         load(lw.attn_k),
                         load(lw.attn_v),
                         load(lw.attn_output),
                         load(lw.attn_q_norm),
                         load(lw.attn_k_norm),
                         KvCache(max_context, config_.n_kv_heads, config_.head_dim, device_)};
    }
    layers_.push_back(std::move(l));
  }
  output_norm_ = load(w.output_norm);
  output_ = load(w.output);
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

// Through a JIT as well, so that starting a conversation schedules nothing after warm-up.
void Qwen35Model::reset() {
  if (!reset_jit_) {
    reset_jit_ = std::make_unique<GraphJit>(
        [this](const std::vector<UOp>&, const VarVals&) {
          std::vector<Tensor> zeroed;
          for (Layer& l : layers_) {
            if (!l.gdn) continue;
            zeroed.push_back(l.gdn->conv_state.assign(0.0));
            zeroed.push_back(l.gdn->state.assign(0.0));
          }
          Tensor::realize_all(zeroed);
          std::vector<UOp> states;
          for (const Tensor& t : zeroed) states.push_back(t.node());
          return states;
        },
        "qwen35 reset");
  }
  (*reset_jit_)({});
}

// out = Wo (attend(rope(norm(q)), rope(norm(k)), v) * sigmoid(gate)), [q_h | gate_h] per head.
Tensor Qwen35Model::attention(Attention& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                              const Chunk& chunk) {
  const int64_t n = chunk.rows, heads = config_.n_heads, kv_heads = config_.n_kv_heads,
                hd = config_.head_dim;
  // The projections are materialized: the norm's reduce, the rotation and the gate read them.
  Tensor qg = h.linear(l.wq).contiguous().reshape({n, heads, 2 * hd});
  Tensor q = rms_norm(qg.shrink({{0, n}, {0, heads}, {0, hd}}), l.q_norm, config_.rms_eps);
  Tensor gate = qg.shrink({{0, n}, {0, heads}, {hd, 2 * hd}}).reshape({n, heads * hd});
  Tensor k =
      rms_norm(h.linear(l.wk).contiguous().reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = h.linear(l.wv).reshape({n, kv_heads, hd});
  Tensor out = l.cache.attend(rope(q, cos, sin), rope(k, cos, sin), v, chunk, var_vals_);
  // Materialized: fused into the projection the gate would be recomputed once per output column.
  return (out * gate.sigmoid()).contiguous().linear(l.wo);
}

// Gated DeltaNet (§6.4) over the chunk's rows; padded rows get beta = 0 and decay = 1.
Tensor Qwen35Model::delta_net(DeltaNet& l, const Tensor& h, const Chunk& chunk) {
  const HybridConfig& hc = *config_.hybrid;
  const int64_t n = chunk.rows, taps = hc.conv_kernel, cd = hc.conv_dim(), kd = hc.key_dim(),
                hk = hc.n_key_heads, hv = hc.n_value_heads, dk = hc.key_head_dim,
                dv = hc.value_head_dim();
  const float eps = config_.rms_eps;
  // The conv window: the previous taps-1 inputs, then this chunk's rows.
  // The projection is materialized first: fused into the concatenation its kernel is ~3x slower.
  Tensor window = cat({l.conv_state, h.linear(l.w_qkv).contiguous()}, 0).contiguous();
  window.realize(var_vals_);
  // The next conv state: the last taps-1 real inputs (padded rows come after them).
  const UOp& len = chunk.len;
  l.conv_state.assign(window.shrink_to({{len, len + (taps - 1)}, {dim(0), dim(cd)}}))
      .realize(var_vals_);
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
  // Value head j reads key head j mod H_k (the tiled order of qwen35 GGUFs, §6.3 note 3).
  const int64_t tiles = hv / hk;
  Tensor q = (l2_norm(heads(0, hk, dk), eps) * (1.0 / std::sqrt(static_cast<double>(dk))))
                 .repeat({1, tiles, 1});
  Tensor k = l2_norm(heads(kd, hk, dk), eps).repeat({1, tiles, 1});
  Tensor v = heads(2 * kd, hv, dv);
  Tensor beta = h.linear(l.w_beta).sigmoid();                              // (n, H_v)
  Tensor decay = (softplus(h.linear(l.w_alpha) + l.dt_bias) * l.a).exp();  // ssm_a < 0
  if (n > 1) {
    Tensor real = Tensor::arange(n, dtypes::int32, device_)
                      .lt(Tensor::from_dim(len, device_))
                      .reshape({n, 1});
    beta = real.where(beta, 0.0);
    decay = real.where(decay, 1.0);
  }
  Tensor y = gated_delta_rule(l.state, q, k, v, beta, decay, var_vals_);  // (n, H_v, d_v)
  Tensor z = h.linear(l.w_z).contiguous().reshape({n, hv, dv});
  // Materialized: fused into the projection SiLU(z) would be recomputed once per output column.
  Tensor gated = (rms_norm(y, l.norm, eps) * z.silu()).reshape({n, hv * dv}).contiguous();
  return gated.linear(l.w_out);
}

// The whole network for a chunk of embedded tokens: the logits of the last real one, (1, vocab).
Tensor Qwen35Model::body(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) {
  for (Layer& l : layers_) {
    x.realize(var_vals_);
    Tensor h = rms_norm(x, l.attn_norm, config_.rms_eps);
    x = x + (l.gdn ? delta_net(*l.gdn, h, chunk) : attention(*l.attn, h, cos, sin, chunk));
    x.realize(var_vals_);
    Tensor f = rms_norm(x, l.ffn_norm, config_.rms_eps);
    x = x + (l.moe ? moe_ffn(*l.moe, f) : ffn(f, l.w_gate, l.w_up, l.w_down));
  }
  Tensor last = x.shrink_to({{chunk.len - 1, chunk.len}, {dim(0), dim(config_.dim)}});
  return rms_norm(last, output_norm_, config_.rms_eps).linear(output_);
}

Tensor Qwen35Model::forward(std::span<const int32_t> tokens, int64_t start_pos) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) fail("forward: no tokens");
  if (n > kMaxChunk) fail("forward: {} tokens in one call; the most is {}", n, kMaxChunk);
  if (start_pos < 0 || start_pos + n > max_context_)
    fail("forward: positions [{}, {}) exceed the context of {} tokens", start_pos, start_pos + n,
         max_context_);
  if (start_pos == 0) reset();
  const int64_t rows = n == 1 ? 1 : kMaxChunk;
  Step& step = steps_[rows];
  if (!step.jit) {
    step.chunk = make_chunk(rows, max_context_);
    // Call 0 runs eagerly, call 1 captures, later calls only launch.
    step.jit = std::make_unique<GraphJit>(
        [this, &step](const std::vector<UOp>& in, const VarVals&) {
          Tensor logits = body(Tensor(in[0], device_), Tensor(in[1], device_),
                               Tensor(in[2], device_), step.chunk);
          return std::vector<UOp>{logits.node()};
        },
        fmt::format("qwen35 forward rows={}", rows));
  }
  var_vals_ = step.chunk.var_vals(start_pos, n);
  Tensor x = embed_rows(*token_embd_, tokens, rows, device_);
  auto [cos, sin] = rope_tables(start_pos, rows, config_.n_rot, config_.rope_theta, device_);
  Tensor inputs[] = {x, cos, sin};
  Tensor::realize_all(inputs);
  std::vector<UOp> out = (*step.jit)({x.node(), cos.node(), sin.node()}, var_vals_);
  return Tensor(out[0], device_);
}

}  // namespace ugrad::llm
