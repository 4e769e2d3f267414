#include "test/llm/reference/qwen3_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "test/llm/reference/reference_math.h"

namespace ugrad::llm::test {

namespace {

constexpr double kDefaultRopeTheta = 10000.0;  // llama.cpp's default without rope.freq_base

}  // namespace

void rope_neox(std::span<double> head, uint32_t pos, double theta) {
  const size_t n = head.size(), half = n / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle = double(pos) * std::pow(theta, -2.0 * double(i) / double(n));
    const double c = std::cos(angle), s = std::sin(angle);
    const double a = head[i], b = head[i + half];
    head[i] = a * c - b * s;
    head[i + half] = a * s + b * c;
  }
}

void rms_norm(std::span<double> x, std::span<const float> weight, double eps) {
  double sum_sq = 0;
  for (double v : x) sum_sq += v * v;
  const double scale = 1.0 / std::sqrt(sum_sq / double(x.size()) + eps);
  for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * scale * double(weight[i]);
}

struct ReferenceQwen3::Projections {
  std::vector<double> q, k, v;  // n_heads*head_dim, n_kv_heads*head_dim (after norms and RoPE)
};

ReferenceQwen3::ReferenceQwen3(const GgufFile& f) {
  if (f.get_string("general.architecture") != "qwen3") {
    fail("reference: general.architecture is '{}', not qwen3",
         f.get_string("general.architecture"));
  }
  hp_.n_layers = key_u32(f, "qwen3.block_count");
  hp_.dim = key_u32(f, "qwen3.embedding_length");
  hp_.ffn_dim = key_u32(f, "qwen3.feed_forward_length");
  hp_.n_heads = key_u32(f, "qwen3.attention.head_count");
  if (hp_.n_heads == 0) fail("reference: qwen3.attention.head_count is 0");
  hp_.n_kv_heads = f.get_u32_or("qwen3.attention.head_count_kv", hp_.n_heads);
  hp_.head_dim = f.get_u32_or("qwen3.attention.key_length", hp_.dim / hp_.n_heads);
  hp_.rope_theta =
      f.has("qwen3.rope.freq_base") ? f.get_f64("qwen3.rope.freq_base") : kDefaultRopeTheta;
  if (!f.has("qwen3.attention.layer_norm_rms_epsilon")) {
    fail("reference: metadata key 'qwen3.attention.layer_norm_rms_epsilon' is missing");
  }
  hp_.rms_eps = f.get_f64("qwen3.attention.layer_norm_rms_epsilon");
  if (hp_.n_kv_heads == 0 || hp_.n_heads % hp_.n_kv_heads != 0 || hp_.head_dim % 2 != 0) {
    fail("reference: bad head counts {} / {} or head_dim {}", hp_.n_heads, hp_.n_kv_heads,
         hp_.head_dim);
  }
  const GgufTensor& embd = f.tensor("token_embd.weight");
  if (embd.dims.size() != 2) fail("reference: token_embd.weight is not 2-D");
  hp_.vocab = static_cast<uint32_t>(embd.dims[1]);

  const uint64_t dim = hp_.dim, vocab = hp_.vocab, ffn = hp_.ffn_dim, hd = hp_.head_dim;
  const uint64_t q_dim = hp_.n_heads * hd, kv_dim = hp_.n_kv_heads * hd;
  token_embd_ = decode_matrix(f, "token_embd.weight", {dim, vocab});
  output_norm_ = decode(f, "output_norm.weight", {dim});
  if (f.find_tensor("output.weight")) output_ = decode_matrix(f, "output.weight", {dim, vocab});
  layers_.resize(hp_.n_layers);
  for (uint32_t i = 0; i < hp_.n_layers; ++i) {
    const auto name = [&](const char* role) { return fmt::format("blk.{}.{}.weight", i, role); };
    Layer& l = layers_[i];
    l.attn_norm = decode(f, name("attn_norm"), {dim});
    l.wq = decode_matrix(f, name("attn_q"), {dim, q_dim});
    l.wk = decode_matrix(f, name("attn_k"), {dim, kv_dim});
    l.wv = decode_matrix(f, name("attn_v"), {dim, kv_dim});
    l.wo = decode_matrix(f, name("attn_output"), {q_dim, dim});
    l.q_norm = decode(f, name("attn_q_norm"), {hd});
    l.k_norm = decode(f, name("attn_k_norm"), {hd});
    l.ffn_norm = decode(f, name("ffn_norm"), {dim});
    l.w_gate = decode_matrix(f, name("ffn_gate"), {dim, ffn});
    l.w_up = decode_matrix(f, name("ffn_up"), {dim, ffn});
    l.w_down = decode_matrix(f, name("ffn_down"), {ffn, dim});
  }
  reset();
}

void ReferenceQwen3::reset() {
  k_cache_.assign(hp_.n_layers, {});
  v_cache_.assign(hp_.n_layers, {});
  n_cached_ = 0;
}

std::vector<double> ReferenceQwen3::embed(int32_t token) const {
  if (token < 0 || uint32_t(token) >= hp_.vocab) {
    fail("reference: token {} is outside the vocabulary [0, {})", token, hp_.vocab);
  }
  const float* row = token_embd_.w.data() + size_t(token) * hp_.dim;
  return std::vector<double>(row, row + hp_.dim);
}

// h = RMSNorm(x, attn_norm); q = Wq h, k = Wk h, v = Wv h; per-head RMSNorm of q and k; RoPE.
ReferenceQwen3::Projections ReferenceQwen3::project_qkv(const Layer& l, std::span<const double> x,
                                                        uint32_t pos) const {
  std::vector<double> h(x.begin(), x.end());
  rms_norm(h, l.attn_norm, hp_.rms_eps);
  const size_t hd = hp_.head_dim;
  Projections p{matvec(l.wq, h, hp_.n_heads * hd), matvec(l.wk, h, hp_.n_kv_heads * hd),
                matvec(l.wv, h, hp_.n_kv_heads * hd)};
  for (uint32_t head = 0; head < hp_.n_heads; ++head) {
    const std::span<double> qh(p.q.data() + head * hd, hd);
    rms_norm(qh, l.q_norm, hp_.rms_eps);
    rope_neox(qh, pos, hp_.rope_theta);
  }
  for (uint32_t head = 0; head < hp_.n_kv_heads; ++head) {
    const std::span<double> kh(p.k.data() + head * hd, hd);
    rms_norm(kh, l.k_norm, hp_.rms_eps);
    rope_neox(kh, pos, hp_.rope_theta);
  }
  return p;
}

// x += Wo concat_h(a_h)
void ReferenceQwen3::add_attention_output(const Layer& l, std::span<const double> heads,
                                          std::span<double> x) const {
  const std::vector<double> o = matvec(l.wo, heads, hp_.dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
}

// x += Wdown (silu(Wgate h) * (Wup h)), h = RMSNorm(x, ffn_norm)
void ReferenceQwen3::add_ffn(const Layer& l, std::span<double> x) const {
  std::vector<double> h(x.begin(), x.end());
  rms_norm(h, l.ffn_norm, hp_.rms_eps);
  std::vector<double> gate = matvec(l.w_gate, h, hp_.ffn_dim);
  const std::vector<double> up = matvec(l.w_up, h, hp_.ffn_dim);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = silu(gate[i]) * up[i];
  const std::vector<double> down = matvec(l.w_down, gate, hp_.dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
}

// logits = Woutput RMSNorm(x, output_norm), Woutput = token_embd when output.weight is absent.
std::vector<float> ReferenceQwen3::logits(std::span<const double> x) const {
  std::vector<double> h(x.begin(), x.end());
  rms_norm(h, output_norm_, hp_.rms_eps);
  const std::vector<double> out = matvec(output_.empty() ? token_embd_ : output_, h, hp_.vocab);
  return std::vector<float>(out.begin(), out.end());
}

std::vector<float> ReferenceQwen3::forward(int32_t token, uint32_t pos) {
  if (pos > n_cached_) {
    fail("reference: position {} skips ahead of the {} cached positions", pos, n_cached_);
  }
  const size_t hd = hp_.head_dim, kv_dim = hp_.n_kv_heads * hd;
  std::vector<double> x = embed(token);
  for (uint32_t li = 0; li < hp_.n_layers; ++li) {
    const Layer& l = layers_[li];
    Projections p = project_qkv(l, x, pos);
    std::vector<double>& kc = k_cache_[li];
    std::vector<double>& vc = v_cache_[li];
    kc.resize(pos * kv_dim);
    vc.resize(pos * kv_dim);
    const std::vector<double> k = as_half(p.k), v = as_half(p.v);
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());
    // a_h = softmax(q_h . K_g^T / sqrt(hd)) V_g over cached positions 0..pos, g = h / group.
    const std::vector<double> heads = attend(p.q, kc, vc, pos + 1, hp_.n_heads, hp_.n_kv_heads, hd);
    add_attention_output(l, heads, x);
    add_ffn(l, x);
  }
  n_cached_ = pos + 1;
  return logits(x);
}

std::vector<std::vector<float>> ReferenceQwen3::forward_sequence(
    std::span<const int32_t> tokens) const {
  const size_t n = tokens.size(), hd = hp_.head_dim;
  std::vector<std::vector<double>> xs;
  for (int32_t t : tokens) xs.push_back(embed(t));
  for (const Layer& l : layers_) {
    std::vector<Projections> p;
    std::vector<double> keys, values;  // every position's, in order
    for (size_t t = 0; t < n; ++t) {
      p.push_back(project_qkv(l, xs[t], uint32_t(t)));
      const std::vector<double> k = as_half(p[t].k), v = as_half(p[t].v);
      keys.insert(keys.end(), k.begin(), k.end());
      values.insert(values.end(), v.begin(), v.end());
    }
    for (size_t t = 0; t < n; ++t) {
      // Causal: position t attends to positions 0..t.
      const std::vector<double> heads =
          attend(p[t].q, keys, values, t + 1, hp_.n_heads, hp_.n_kv_heads, hd);
      add_attention_output(l, heads, xs[t]);
    }
    for (std::vector<double>& x : xs) add_ffn(l, x);
  }
  std::vector<std::vector<float>> out;
  for (const std::vector<double>& x : xs) out.push_back(logits(x));
  return out;
}

std::vector<int32_t> ReferenceQwen3::greedy(std::span<const int32_t> prompt, uint32_t n_new) {
  if (prompt.empty()) fail("reference: greedy needs a non-empty prompt");
  reset();
  std::vector<float> last;
  uint32_t pos = 0;
  for (int32_t t : prompt) last = forward(t, pos++);
  std::vector<int32_t> generated;
  for (uint32_t i = 0; i < n_new; ++i) {
    // max_element returns the first maximum: the lowest id wins ties.
    const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
    generated.push_back(next);
    if (i + 1 < n_new) last = forward(next, pos++);
  }
  return generated;
}

}  // namespace ugrad::llm::test
