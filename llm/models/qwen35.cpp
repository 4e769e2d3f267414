#include "llm/models/qwen35.h"

#include <cmath>

#include <fmt/format.h>

#include "base/error.h"
#include "base/quote.h"
#include "runtime/jit.h"

namespace ugrad::llm {

namespace {

constexpr double kSoftplusLinear = 20.0;  // softplus(x) = x beyond this (as torch and llama.cpp)

// x / max(||x||_2, eps) over the last axis (ggml_l2_norm).
Tensor l2_norm(const Tensor& x, float eps) {
  return x * maximum(x.square().sum({-1}, true).sqrt(), eps).reciprocal();
}

Tensor softplus(const Tensor& x) { return (x > kSoftplusLinear).where(x, (x.exp() + 1).log()); }

// One row (decode), in place: [M' k | M' q] with M' = decay M from the old state, then
// M <- M' + beta (v - M' k) (x) k, out = M' q + beta (v - M' k) (k . q).
Tensor delta_rule_row(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& beta, const Tensor& log_decay) {
  const int64_t heads = q.size(1), dk = q.size(2), dv = v.size(2);
  // Read by several kernels: computed once. [k | q] (heads, 2, d_k).
  Tensor in[] = {cat({k.reshape({heads, 1, dk}), q.reshape({heads, 1, dk})}, 1),
                 v.reshape({heads, dv}), beta.reshape({heads, 1}),
                 log_decay.exp().reshape({heads, 1, 1})};
  Tensor::realize_all(in);
  const Tensor &kq = in[0], &vs = in[1], &betas = in[2], &decay = in[3];
  Tensor k1 = kq.shrink({{0, heads}, {0, 1}, {0, dk}}),
         q1 = kq.shrink({{0, heads}, {1, 2}, {0, dk}});
  Tensor proj = ((state * decay).unsqueeze(2) * kq.unsqueeze(1)).sum({-1});
  auto delta = [&](const Tensor& p) {  // (heads, d_v)
    return betas * (vs - p.shrink({{0, heads}, {0, dv}, {0, 1}}).reshape({heads, dv}));
  };
  Tensor out = proj.shrink({{0, heads}, {0, dv}, {1, 2}}).reshape({heads, dv}) +
               delta(proj) * (q1 * k1).sum({-1});
  Tensor done[] = {out.reshape({1, heads, dv}), proj};
  Tensor::realize_all(done);
  // In place: each element is read and written by one thread, after the projection it needs.
  state.assign(state * decay + delta(done[1]).reshape({heads, dv, 1}) * k1).realize();
  return done[0];
}

// A constant (n, n) float32 mask: 1 where pred(i, j).
template <typename Pred>
Tensor index_mask(int64_t n, Pred pred, const std::string& device) {
  std::vector<float> m(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) m[i * n + j] = pred(i, j) ? 1.0f : 0.0f;
  return Tensor::from_vector(m, {n, n}, dtypes::float32, device);
}

// The rows of a chunk at once in the WY form of docs/qwen.md#chunked-delta-rule (HF's
// chunk_gated_delta_rule), per head with S = M^T, G = cumsum(log decay), D[i][j] = exp(G_i - G_j)
// for j <= i, else 0:
//   A = strictly_lower((beta k_i . k_j) D),  T = (I + A)^-1,  U = T (beta v),
//   W = T (beta k exp(G)),  V' = U - W S,  out = (q exp(G)) S + ((q_i . k_j) D) V',
//   S <- exp(G_last) S + (k exp(G_last - G))^T V'.
// A padded row (beta 0, log decay 0) has a zero row in A, so its row of T is e_i and its rows of
// U, W and V' are exactly zero: it adds exact zeros to the state and to the other rows' outputs.
Tensor delta_rule_chunk(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& beta, const Tensor& log_decay) {
  const int64_t n = q.size(0), heads = q.size(1);
  const std::string& device = state.device();
  // Heads first: (heads, n, d); beta (heads, n, 1); G (heads, n).
  Tensor in[] = {q.permute({1, 0, 2}), k.permute({1, 0, 2}), v.permute({1, 0, 2}),
                 beta.transpose().unsqueeze(-1), log_decay.transpose().cumsum(1)};
  Tensor::realize_all(in);
  const Tensor &qh = in[0], &kh = in[1], &vh = in[2], &bh = in[3], &cum = in[4];
  Tensor lower = index_mask(
      n, [](int64_t i, int64_t j) { return i > j; }, device);
  Tensor lower_incl = index_mask(
      n, [](int64_t i, int64_t j) { return i >= j; }, device);
  // G_i - G_j <= 0 on and below the diagonal; above it the clamp keeps exp finite before the mask.
  Tensor decays =
      (minimum(cum.unsqueeze(2) - cum.unsqueeze(1), 0.0).exp() * lower_incl).contiguous();
  Tensor kb = kh * bh;
  Tensor a = (kb.matmul(kh.transpose()) * decays * lower).contiguous();
  // (I + A)^-1 by blocked inversion: with T the inverse of the diagonal blocks of size b, the
  // inverse of the blocks of size 2b is T - T A_off T, A_off = the lower-left b x b block of each
  // 2b block of A (as forward substitution, without the cancellation of a power series).
  Tensor t = Tensor::eye(n, std::nullopt, dtypes::float32, device);
  for (int64_t b = 1; b < n; b *= 2) {
    auto off_block = [b](int64_t i, int64_t j) {
      return i / (2 * b) == j / (2 * b) && i / b != j / b;
    };
    Tensor off = a * index_mask(n, off_block, device);
    t = (t - t.matmul(off).matmul(t)).contiguous();
  }
  Tensor eg = cum.exp().unsqueeze(-1);  // (heads, n, 1)
  Tensor s = state.transpose();         // (heads, d_k, d_v)
  Tensor vp = t.matmul(vh * bh) - t.matmul(kb * eg).matmul(s);
  Tensor out = (qh * eg).matmul(s) + (qh.matmul(kh.transpose()) * decays).matmul(vp);
  Tensor done[] = {out.permute({1, 0, 2}), vp};
  Tensor::realize_all(done);
  // In place: element (h, j, i) reads only itself of the old state (and V', computed before).
  Tensor g_last = cum.shrink({{0, heads}, {n - 1, n}});  // (heads, 1)
  Tensor k_decayed = kh * (g_last - cum).exp().unsqueeze(-1);
  state.assign(state * g_last.exp().unsqueeze(-1) + done[1].transpose().matmul(k_decayed))
      .realize();
  return done[0];
}

}  // namespace

Tensor gated_delta_rule(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& beta, const Tensor& log_decay) {
  return q.size(0) == 1 ? delta_rule_row(state, q, k, v, beta, log_decay)
                        : delta_rule_chunk(state, q, k, v, beta, log_decay);
}

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
      d.w_qkv = load_linear(lw.attn_qkv);
      d.w_z = load_linear(lw.attn_gate);
      d.conv = load(lw.ssm_conv1d);
      d.dt_bias = load(lw.ssm_dt);
      d.a = load(lw.ssm_a);
      d.w_beta = load_linear(lw.ssm_beta);
      d.w_alpha = load_linear(lw.ssm_alpha);
      d.norm = load(lw.ssm_norm);
      d.w_out = load_linear(lw.ssm_out);
      d.conv_state =
          Tensor::zeros({taps - 1, hc.conv_dim()}, dtypes::float32, device_).contiguous();
      d.state = Tensor::zeros({hv, hc.value_head_dim(), hc.key_head_dim}, dtypes::float32, device_)
                    .contiguous();
      Tensor states[] = {d.conv_state, d.state};
      Tensor::realize_all(states);
    } else {
      l.attn = Attention{load_linear(lw.attn_q),
                         load_linear(lw.attn_k),
                         load_linear(lw.attn_v),
                         load_linear(lw.attn_output),
                         load(lw.attn_q_norm),
                         load(lw.attn_k_norm),
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

// Through a JIT as well, so that starting a conversation schedules nothing after warm-up.
void Qwen35Model::reset() {
  if (!reset_jit_) {
    reset_jit_ = std::make_unique<GraphJit>(
        [this](const std::vector<UOp>&) {
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
  Tensor qg = l.wq(h).contiguous().reshape({n, heads, 2 * hd});
  Tensor q = rms_norm(qg.shrink({{0, n}, {0, heads}, {0, hd}}), l.q_norm, config_.rms_eps);
  Tensor gate = qg.shrink({{0, n}, {0, heads}, {hd, 2 * hd}}).reshape({n, heads * hd});
  Tensor k = rms_norm(l.wk(h).contiguous().reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = l.wv(h).contiguous().reshape({n, kv_heads, hd});
  Tensor out = l.cache.attend(rope(q, cos, sin), rope(k, cos, sin), v, chunk);
  // Materialized: fused into the projection the gate would be recomputed once per output column.
  return l.wo((out * gate.sigmoid()).contiguous());
}

// Gated DeltaNet (docs/qwen.md#gated-deltanet) over the chunk's rows; padded rows get beta = 0
// and decay = 1.
Tensor Qwen35Model::delta_net(DeltaNet& l, const Tensor& h, const Chunk& chunk) {
  const HybridConfig& hc = *config_.hybrid;
  const int64_t n = chunk.rows, taps = hc.conv_kernel, cd = hc.conv_dim(), kd = hc.key_dim(),
                hk = hc.n_key_heads, hv = hc.n_value_heads, dk = hc.key_head_dim,
                dv = hc.value_head_dim();
  const float eps = config_.rms_eps;
  // The conv window: the previous taps-1 inputs, then this chunk's rows.
  // The projection is materialized first: fused into the concatenation its kernel is ~3x slower.
  Tensor window = cat({l.conv_state, l.w_qkv(h).contiguous()}, 0);
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
  Tensor beta = l.w_beta(h).sigmoid();                          // (n, H_v)
  Tensor log_decay = softplus(l.w_alpha(h) + l.dt_bias) * l.a;  // ssm_a < 0
  if (n > 1) {
    Tensor real = Tensor::arange(n, dtypes::int32, device_)
                      .lt(Tensor::from_dim(len, device_))
                      .reshape({n, 1});
    beta = real.where(beta, 0.0);
    log_decay = real.where(log_decay, 0.0);
  }
  Tensor y = gated_delta_rule(l.state, q, k, v, beta, log_decay);  // (n, H_v, d_v)
  Tensor z = l.w_z(h).contiguous().reshape({n, hv, dv});
  // Materialized: fused into the projection SiLU(z) would be recomputed once per output column.
  Tensor gated = (rms_norm(y, l.norm, eps) * z.silu()).reshape({n, hv * dv}).contiguous();
  return l.w_out(gated);
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

// A new sequence starts from zeroed states.
void Qwen35Model::before_forward(int64_t start_pos) {
  if (start_pos == 0) reset();
}

}  // namespace ugrad::llm
