#include "test/llm/reference/qwen35_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "base/error.h"
#include "test/llm/reference/qwen3_reference.h"
#include "test/llm/reference/reference_math.h"

namespace ugrad::llm::test {

namespace {

constexpr double kDefaultRopeTheta = 10000.0;  // llama.cpp's default without rope.freq_base
// llama.cpp's default (docs/qwen.md#qwen35-metadata).
constexpr uint32_t kDefaultFullAttnInterval = 4;
constexpr double kSoftplusLinear = 20.0;  // softplus(x) = x beyond this (as torch)

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double softplus(double v) { return v > kSoftplusLinear ? v : std::log1p(std::exp(v)); }

// x / max(||x||_2, eps), in place (llama.cpp's ggml_l2_norm).
void l2_norm(std::span<double> x, double eps) {
  double sum_sq = 0;
  for (double v : x) sum_sq += v * v;
  const double scale = 1.0 / std::max(std::sqrt(sum_sq), eps);
  for (double& v : x) v *= scale;
}

// silu(Wgate h) * (Wup h), then Wdown: one SwiGLU FFN whose matrices start at the given spans.
std::vector<double> swiglu(MatrixView gate, MatrixView up, MatrixView down,
                           std::span<const double> h, size_t ffn) {
  std::vector<double> g = matvec(gate, h, ffn);
  const std::vector<double> u = matvec(up, h, ffn);
  for (size_t i = 0; i < ffn; ++i) g[i] = silu(g[i]) * u[i];
  return matvec(down, g, h.size());
}

}  // namespace

void gated_delta_step(std::span<double> state, std::span<const double> q, std::span<const double> k,
                      std::span<const double> v, double beta, double decay, std::span<double> out) {
  const size_t dk = k.size(), dv = v.size();
  if (state.size() != dv * dk || q.size() != dk || out.size() != dv) {
    fail("reference: gated_delta_step sizes: state {}, q {}, k {}, v {}, out {}", state.size(),
         q.size(), dk, dv, out.size());
  }
  for (double& m : state) m *= decay;
  for (size_t j = 0; j < dv; ++j) {
    double u = 0;  // (M k)_j
    for (size_t i = 0; i < dk; ++i) u += state[j * dk + i] * k[i];
    const double delta = beta * (v[j] - u);
    for (size_t i = 0; i < dk; ++i) state[j * dk + i] += delta * k[i];
  }
  for (size_t j = 0; j < dv; ++j) {
    double o = 0;
    for (size_t i = 0; i < dk; ++i) o += state[j * dk + i] * q[i];
    out[j] = o;
  }
}

struct ReferenceQwen35::Attn {
  std::vector<double> q, gate, k, v;  // q after norm and RoPE; gate raw (n_heads*head_dim)
};

struct ReferenceQwen35::Gdn {
  std::vector<double> mixed, z, beta, decay;  // conv input, gate z, per value head beta, e^g
};

uint32_t ReferenceQwen35::conv_dim() const {
  return 2 * hp_.n_key_heads * hp_.key_head_dim + hp_.n_value_heads * hp_.value_head_dim;
}

ReferenceQwen35::ReferenceQwen35(const GgufFile& f) {
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "qwen35" && arch != "qwen35moe" && arch != "qwen3moe") {
    fail("reference: general.architecture is '{}', not qwen35, qwen35moe or qwen3moe", arch);
  }
  const bool moe = arch != "qwen35";
  hybrid_ = arch != "qwen3moe";
  const auto key = [&](const char* suffix) { return fmt::format("{}.{}", arch, suffix); };
  const uint32_t n_blocks = key_u32(f, key("block_count"));
  hp_.n_layers = n_blocks - f.get_u32_or(key("nextn_predict_layers"), 0);
  hp_.dim = key_u32(f, key("embedding_length"));
  hp_.n_heads = key_u32(f, key("attention.head_count"));
  hp_.n_kv_heads = f.get_u32_or(key("attention.head_count_kv"), hp_.n_heads);
  hp_.head_dim = f.get_u32_or(key("attention.key_length"), hp_.dim / std::max(hp_.n_heads, 1u));
  hp_.n_rot = f.get_u32_or(key("rope.dimension_count"), hp_.head_dim);
  hp_.rope_theta =
      f.has(key("rope.freq_base")) ? f.get_f64(key("rope.freq_base")) : kDefaultRopeTheta;
  hp_.rms_eps = f.get_f64(key("attention.layer_norm_rms_epsilon"));
  if (hybrid_) {
    hp_.conv_kernel = key_u32(f, key("ssm.conv_kernel"));
    hp_.key_head_dim = key_u32(f, key("ssm.state_size"));
    hp_.n_key_heads = key_u32(f, key("ssm.group_count"));
    hp_.n_value_heads = key_u32(f, key("ssm.time_step_rank"));
    if (hp_.n_key_heads == 0 || hp_.n_value_heads == 0 || hp_.conv_kernel == 0) {
      fail("reference: inconsistent {} ssm hyperparameters", arch);
    }
    hp_.value_head_dim = key_u32(f, key("ssm.inner_size")) / hp_.n_value_heads;
  }
  if (hp_.n_heads == 0 || hp_.n_kv_heads == 0 || hp_.n_heads % hp_.n_kv_heads != 0 ||
      hp_.n_rot > hp_.head_dim || hp_.n_rot % 2 != 0 || hp_.n_layers == 0) {
    fail("reference: inconsistent {} hyperparameters", arch);
  }
  if (moe) {
    hp_.n_experts = key_u32(f, key("expert_count"));
    hp_.n_experts_used = key_u32(f, key("expert_used_count"));
    hp_.expert_ffn_dim = key_u32(f, key("expert_feed_forward_length"));
    hp_.shared_ffn_dim = f.get_u32_or(key("expert_shared_feed_forward_length"), 0);
    if (hp_.n_experts_used == 0 || hp_.n_experts_used > hp_.n_experts) {
      fail("reference: {} of {} experts used", hp_.n_experts_used, hp_.n_experts);
    }
  } else {
    hp_.ffn_dim = key_u32(f, key("feed_forward_length"));
  }
  if (f.has(key("attention.recurrent_layers"))) {
    fail("reference: '{}' is not read by the reference", key("attention.recurrent_layers"));
  }
  const uint32_t interval = f.get_u32_or(key("full_attention_interval"), kDefaultFullAttnInterval);
  for (uint32_t i = 0; i < hp_.n_layers; ++i) {
    hp_.recurrent.push_back(hybrid_ && (i + 1) % interval != 0);
  }
  const GgufTensor& embd = f.tensor("token_embd.weight");
  if (embd.dims.size() != 2) fail("reference: token_embd.weight is not 2-D");
  hp_.vocab = static_cast<uint32_t>(embd.dims[1]);

  const uint64_t dim = hp_.dim, vocab = hp_.vocab, hd = hp_.head_dim;
  const uint64_t q_dim = hp_.n_heads * hd, kv_dim = hp_.n_kv_heads * hd;
  const uint64_t hv = hp_.n_value_heads, value_dim = hv * hp_.value_head_dim;
  token_embd_ = decode_matrix(f, "token_embd.weight", {dim, vocab});
  output_norm_ = decode(f, "output_norm.weight", {dim});
  if (f.find_tensor("output.weight")) output_ = decode_matrix(f, "output.weight", {dim, vocab});
  layers_.resize(hp_.n_layers);
  for (uint32_t i = 0; i < hp_.n_layers; ++i) {
    const auto name = [&](const char* role) { return fmt::format("blk.{}.{}.weight", i, role); };
    Layer& l = layers_[i];
    l.attn_norm = decode(f, name("attn_norm"), {dim});
    l.ffn_norm = decode(f, name(hybrid_ ? "post_attention_norm" : "ffn_norm"), {dim});
    if (hp_.recurrent[i]) {
      l.w_qkv = decode_matrix(f, name("attn_qkv"), {dim, conv_dim()});
      l.w_z = decode_matrix(f, name("attn_gate"), {dim, value_dim});
      l.conv = decode(f, name("ssm_conv1d"), {hp_.conv_kernel, conv_dim()});
      l.dt_bias = decode(f, fmt::format("blk.{}.ssm_dt.bias", i), {hv});
      l.ssm_a = decode(f, fmt::format("blk.{}.ssm_a", i), {hv});
      l.w_beta = decode_matrix(f, name("ssm_beta"), {dim, hv});
      l.w_alpha = decode_matrix(f, name("ssm_alpha"), {dim, hv});
      l.ssm_norm = decode(f, name("ssm_norm"), {hp_.value_head_dim});
      l.w_out = decode_matrix(f, name("ssm_out"), {value_dim, dim});
    } else {
      l.wq = decode_matrix(f, name("attn_q"), {dim, (hybrid_ ? 2 : 1) * q_dim});
      l.wk = decode_matrix(f, name("attn_k"), {dim, kv_dim});
      l.wv = decode_matrix(f, name("attn_v"), {dim, kv_dim});
      l.wo = decode_matrix(f, name("attn_output"), {q_dim, dim});
      l.q_norm = decode(f, name("attn_q_norm"), {hd});
      l.k_norm = decode(f, name("attn_k_norm"), {hd});
    }
    if (moe) {
      const uint64_t e = hp_.n_experts, ff = hp_.expert_ffn_dim, sh = hp_.shared_ffn_dim;
      l.router = decode(f, name("ffn_gate_inp"), {dim, e});
      l.gate_exps = decode(f, name("ffn_gate_exps"), {dim, ff, e});
      l.up_exps = decode(f, name("ffn_up_exps"), {dim, ff, e});
      l.down_exps = decode(f, name("ffn_down_exps"), {ff, dim, e});
      if (sh > 0) {
        l.gate_shexp = decode_matrix(f, name("ffn_gate_shexp"), {dim, sh});
        l.up_shexp = decode_matrix(f, name("ffn_up_shexp"), {dim, sh});
        l.down_shexp = decode_matrix(f, name("ffn_down_shexp"), {sh, dim});
        l.gate_inp_shexp = decode(f, name("ffn_gate_inp_shexp"), {dim});
      }
    } else {
      const uint64_t ffn = hp_.ffn_dim;
      l.w_gate = decode_matrix(f, name("ffn_gate"), {dim, ffn});
      l.w_up = decode_matrix(f, name("ffn_up"), {dim, ffn});
      l.w_down = decode_matrix(f, name("ffn_down"), {ffn, dim});
    }
  }
  reset();
}

void ReferenceQwen35::reset() {
  k_cache_.assign(hp_.n_layers, {});
  v_cache_.assign(hp_.n_layers, {});
  conv_state_.assign(hp_.n_layers, {});
  ssm_state_.assign(hp_.n_layers, {});
  for (uint32_t i = 0; i < hp_.n_layers; ++i) {
    if (!hp_.recurrent[i]) continue;
    conv_state_[i].assign(size_t(hp_.conv_kernel - 1) * conv_dim(), 0.0);
    ssm_state_[i].assign(size_t(hp_.n_value_heads) * hp_.value_head_dim * hp_.key_head_dim, 0.0);
  }
  n_cached_ = 0;
}

std::vector<double> ReferenceQwen35::embed(int32_t token) const {
  if (token < 0 || uint32_t(token) >= hp_.vocab) {
    fail("reference: token {} is outside the vocabulary [0, {})", token, hp_.vocab);
  }
  const float* row = token_embd_.w.data() + size_t(token) * hp_.dim;
  return std::vector<double>(row, row + hp_.dim);
}

// [q_h | gate_h] = (Wq h) per head; q_h, k_j RMS-normed per head; RoPE on the first n_rot dims.
ReferenceQwen35::Attn ReferenceQwen35::project_attention(const Layer& l, std::span<const double> h,
                                                         uint32_t pos) const {
  const size_t hd = hp_.head_dim;
  // Without the gate (qwen3moe) each head is just q_h.
  const size_t per_head = (hybrid_ ? 2 : 1) * hd;
  const std::vector<double> qg = matvec(l.wq, h, hp_.n_heads * per_head);
  Attn p;
  for (uint32_t head = 0; head < hp_.n_heads; ++head) {
    const auto q_begin = qg.begin() + head * per_head;
    p.q.insert(p.q.end(), q_begin, q_begin + hd);
    if (hybrid_) p.gate.insert(p.gate.end(), q_begin + hd, q_begin + 2 * hd);
    const std::span<double> qh(p.q.data() + head * hd, hd);
    rms_norm(qh, l.q_norm, hp_.rms_eps);
    rope_neox(qh.first(hp_.n_rot), pos, hp_.rope_theta);
  }
  p.k = matvec(l.wk, h, hp_.n_kv_heads * hd);
  p.v = matvec(l.wv, h, hp_.n_kv_heads * hd);
  for (uint32_t head = 0; head < hp_.n_kv_heads; ++head) {
    const std::span<double> kh(p.k.data() + head * hd, hd);
    rms_norm(kh, l.k_norm, hp_.rms_eps);
    rope_neox(kh.first(hp_.n_rot), pos, hp_.rope_theta);
  }
  return p;
}

// Wo (concat_h(a_h) * sigmoid(concat_h(gate_h)))
std::vector<double> ReferenceQwen35::gated_output(const Layer& l, const Attn& p,
                                                  std::span<const double> heads) const {
  std::vector<double> gated(heads.begin(), heads.end());
  for (size_t i = 0; i < p.gate.size(); ++i) gated[i] *= sigmoid(p.gate[i]);  // none: qwen3moe
  return matvec(l.wo, gated, hp_.dim);
}

// mixed = Wqkv h, z = Wgate h, beta = sigmoid(Wbeta h), decay = exp(ssm_a * softplus(Walpha h +
// dt_bias)).
ReferenceQwen35::Gdn ReferenceQwen35::project_gdn(const Layer& l, std::span<const double> h) const {
  const uint32_t hv = hp_.n_value_heads;
  Gdn p{matvec(l.w_qkv, h, conv_dim()), matvec(l.w_z, h, size_t(hv) * hp_.value_head_dim),
        matvec(l.w_beta, h, hv), matvec(l.w_alpha, h, hv)};
  for (uint32_t v = 0; v < hv; ++v) {
    p.beta[v] = sigmoid(p.beta[v]);
    p.decay[v] = std::exp(double(l.ssm_a[v]) * softplus(p.decay[v] + double(l.dt_bias[v])));
  }
  return p;
}

// From the conv output (before SiLU): split q|k|v, L2-normalise q and k per key head, scale q,
// run the delta rule per value head (key head h mod H_k), gated RMSNorm, Wssm_out.
std::vector<double> ReferenceQwen35::gdn_output(const Layer& l, const Gdn& p,
                                                std::span<const double> conv_out,
                                                std::vector<double>& state) const {
  const size_t dk = hp_.key_head_dim, dv = hp_.value_head_dim, hk = hp_.n_key_heads;
  const size_t key_dim = hk * dk;
  std::vector<double> c(conv_out.begin(), conv_out.end());
  for (double& v : c) v = silu(v);
  const std::span<double> q(c.data(), key_dim), k(c.data() + key_dim, key_dim);
  const std::span<const double> v(c.data() + 2 * key_dim, hp_.n_value_heads * dv);
  const double q_scale = 1.0 / std::sqrt(double(dk));
  for (size_t kh = 0; kh < hk; ++kh) {
    l2_norm(q.subspan(kh * dk, dk), hp_.rms_eps);
    l2_norm(k.subspan(kh * dk, dk), hp_.rms_eps);
  }
  for (double& x : q) x *= q_scale;
  std::vector<double> y(hp_.n_value_heads * dv);
  for (size_t h = 0; h < hp_.n_value_heads; ++h) {
    // Tiled mapping of qwen35 GGUFs (docs/qwen.md#converter-transformations).
    const size_t kh = h % hk;
    const std::span<double> out(y.data() + h * dv, dv);
    gated_delta_step(std::span(state).subspan(h * dv * dk, dv * dk), q.subspan(kh * dk, dk),
                     k.subspan(kh * dk, dk), v.subspan(h * dv, dv), p.beta[h], p.decay[h], out);
    rms_norm(out, l.ssm_norm, hp_.rms_eps);
    for (size_t j = 0; j < dv; ++j) out[j] *= silu(p.z[h * dv + j]);
  }
  return matvec(l.w_out, y, hp_.dim);
}

// x += FFN(RMSNorm(x, post_attention_norm)): dense SwiGLU, or the top-k experts with
// renormalised softmax weights plus the sigmoid-gated shared expert (docs/qwen.md#moe-ffn).
void ReferenceQwen35::add_ffn(const Layer& l, std::span<double> x) const {
  std::vector<double> h(x.begin(), x.end());
  rms_norm(h, l.ffn_norm, hp_.rms_eps);
  std::vector<double> y(hp_.dim, 0.0);
  if (hp_.n_experts == 0) {
    y = swiglu(l.w_gate, l.w_up, l.w_down, h, hp_.ffn_dim);
  } else {
    std::vector<double> p = matvec(l.router, h, hp_.n_experts);
    softmax(p);
    std::vector<uint32_t> order(hp_.n_experts);
    std::iota(order.begin(), order.end(), 0u);
    // Highest probability first; the lower expert id wins ties.
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
    double total = 0;
    for (uint32_t r = 0; r < hp_.n_experts_used; ++r) total += p[order[r]];
    const size_t expert_size = size_t(hp_.dim) * hp_.expert_ffn_dim;
    for (uint32_t r = 0; r < hp_.n_experts_used; ++r) {
      const uint32_t e = order[r];
      // Routed experts take their input unrounded (the model's are no Linear layers).
      const auto slice = [&](const std::vector<float>& w) {
        return MatrixView{std::span<const float>(w).subspan(e * expert_size, expert_size)};
      };
      const std::vector<double> out =
          swiglu(slice(l.gate_exps), slice(l.up_exps), slice(l.down_exps), h, hp_.expert_ffn_dim);
      for (size_t i = 0; i < y.size(); ++i) y[i] += p[e] / total * out[i];
    }
    if (hp_.shared_ffn_dim > 0) {
      double g = 0;
      for (size_t i = 0; i < h.size(); ++i) g += double(l.gate_inp_shexp[i]) * h[i];
      const std::vector<double> out =
          swiglu(l.gate_shexp, l.up_shexp, l.down_shexp, h, hp_.shared_ffn_dim);
      for (size_t i = 0; i < y.size(); ++i) y[i] += sigmoid(g) * out[i];
    }
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

std::vector<float> ReferenceQwen35::logits(std::span<const double> x) const {
  std::vector<double> h(x.begin(), x.end());
  rms_norm(h, output_norm_, hp_.rms_eps);
  const std::vector<double> out = matvec(output_.empty() ? token_embd_ : output_, h, hp_.vocab);
  return std::vector<float>(out.begin(), out.end());
}

std::vector<float> ReferenceQwen35::forward(int32_t token, uint32_t pos) {
  if (pos == 0) reset();
  if (pos != n_cached_) {
    fail("reference: position {} is not the next position {} (recurrent states cannot rewind)", pos,
         n_cached_);
  }
  const size_t hd = hp_.head_dim, cd = conv_dim();
  const size_t taps = hp_.conv_kernel;
  std::vector<double> x = embed(token);
  for (uint32_t li = 0; li < hp_.n_layers; ++li) {
    const Layer& l = layers_[li];
    std::vector<double> h = x;
    rms_norm(h, l.attn_norm, hp_.rms_eps);
    std::vector<double> mixer;
    if (hp_.recurrent[li]) {
      const Gdn p = project_gdn(l, h);
      // Window = conv state (K-1 previous inputs, oldest first) then this token's input.
      std::vector<double>& cs = conv_state_[li];
      std::vector<double> conv_out(cd, 0.0);
      for (size_t ch = 0; ch < cd; ++ch) {
        for (size_t i = 0; i + 1 < taps; ++i)
          conv_out[ch] += l.conv[ch * taps + i] * cs[i * cd + ch];
        conv_out[ch] += l.conv[ch * taps + taps - 1] * p.mixed[ch];
      }
      if (taps > 1) {
        cs.erase(cs.begin(), cs.begin() + cd);
        cs.insert(cs.end(), p.mixed.begin(), p.mixed.end());
      }
      mixer = gdn_output(l, p, conv_out, ssm_state_[li]);
    } else {
      const Attn p = project_attention(l, h, pos);
      std::vector<double>& kc = k_cache_[li];
      std::vector<double>& vc = v_cache_[li];
      const std::vector<double> k = as_half(p.k), v = as_half(p.v);
      kc.insert(kc.end(), k.begin(), k.end());
      vc.insert(vc.end(), v.begin(), v.end());
      const std::vector<double> heads =
          attend(p.q, kc, vc, pos + 1, hp_.n_heads, hp_.n_kv_heads, hd);
      mixer = gated_output(l, p, heads);
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] += mixer[i];
    add_ffn(l, x);
  }
  n_cached_ = pos + 1;
  return logits(x);
}

std::vector<std::vector<float>> ReferenceQwen35::forward_sequence(
    std::span<const int32_t> tokens) const {
  const size_t n = tokens.size(), hd = hp_.head_dim, cd = conv_dim(), taps = hp_.conv_kernel;
  std::vector<std::vector<double>> xs;
  for (int32_t t : tokens) xs.push_back(embed(t));
  for (uint32_t li = 0; li < hp_.n_layers; ++li) {
    const Layer& l = layers_[li];
    std::vector<std::vector<double>> hs;
    for (const std::vector<double>& x : xs) {
      hs.push_back(x);
      rms_norm(hs.back(), l.attn_norm, hp_.rms_eps);
    }
    std::vector<std::vector<double>> mixer(n);
    if (hp_.recurrent[li]) {
      std::vector<Gdn> p;
      for (size_t t = 0; t < n; ++t) p.push_back(project_gdn(l, hs[t]));
      std::vector<double> state(size_t(hp_.n_value_heads) * hp_.value_head_dim * hp_.key_head_dim,
                                0.0);
      for (size_t t = 0; t < n; ++t) {
        // Causal conv over the sequence, zero before position 0: tap i reads token t-(K-1)+i.
        std::vector<double> conv_out(cd, 0.0);
        for (size_t i = 0; i < taps; ++i) {
          if (t + i + 1 < taps) continue;
          const std::vector<double>& in = p[t + i + 1 - taps].mixed;
          for (size_t ch = 0; ch < cd; ++ch) conv_out[ch] += l.conv[ch * taps + i] * in[ch];
        }
        mixer[t] = gdn_output(l, p[t], conv_out, state);
      }
    } else {
      std::vector<Attn> p;
      std::vector<double> keys, values;  // every position's, in order
      for (size_t t = 0; t < n; ++t) {
        p.push_back(project_attention(l, hs[t], uint32_t(t)));
        const std::vector<double> k = as_half(p[t].k), v = as_half(p[t].v);
        keys.insert(keys.end(), k.begin(), k.end());
        values.insert(values.end(), v.begin(), v.end());
      }
      for (size_t t = 0; t < n; ++t) {
        // Causal: position t attends to positions 0..t.
        const std::vector<double> heads =
            attend(p[t].q, keys, values, t + 1, hp_.n_heads, hp_.n_kv_heads, hd);
        mixer[t] = gated_output(l, p[t], heads);
      }
    }
    for (size_t t = 0; t < n; ++t) {
      for (size_t i = 0; i < hp_.dim; ++i) xs[t][i] += mixer[t][i];
      add_ffn(l, xs[t]);
    }
  }
  std::vector<std::vector<float>> out;
  for (const std::vector<double>& x : xs) out.push_back(logits(x));
  return out;
}

std::vector<int32_t> ReferenceQwen35::greedy(std::span<const int32_t> prompt, uint32_t n_new) {
  if (prompt.empty()) fail("reference: greedy needs a non-empty prompt");
  std::vector<float> last;
  uint32_t pos = 0;
  for (int32_t t : prompt) last = forward(t, pos++);
  std::vector<int32_t> generated;
  for (uint32_t i = 0; i < n_new; ++i) {
    const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
    generated.push_back(next);
    if (i + 1 < n_new) last = forward(next, pos++);
  }
  return generated;
}

}  // namespace ugrad::llm::test
