#include "llm/train/qwen3_train.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "base/error.h"
#include "llm/models/layers.h"

namespace ugrad::llm {

TrainableQwen3::TrainableQwen3(TrainShape shape, uint64_t seed, const std::string& device)
    : shape_(shape), device_(device) {
  const TrainShape& s = shape_;
  if (s.n_layers <= 0 || s.dim <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0 ||
      s.ffn_dim <= 0 || s.vocab <= 0 || s.n_heads % s.n_kv_heads != 0 || s.head_dim % 2 != 0 ||
      s.n_classes() > s.vocab || s.unseen < 0)
    fail(
        "TrainableQwen3: layers, dim, heads, kv heads, head dim, ffn and vocab must be positive, "
        "heads a multiple of kv heads, head dim even and classes at most vocab (got {} layers, "
        "dim {}, {}/{} heads of {}, ffn {}, vocab {}, classes {}, unseen {})",
        s.n_layers, s.dim, s.n_heads, s.n_kv_heads, s.head_dim, s.ffn_dim, s.vocab, s.classes,
        s.unseen);
  Tensor::manual_seed(seed);
  add("token_embd.weight", {s.vocab, s.dim}, false);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const auto n = [&](const char* what) { return fmt::format("blk.{}.{}.weight", l, what); };
    add(n("attn_norm"), {s.dim}, true);
    add(n("attn_q"), {s.n_heads * s.head_dim, s.dim}, false);
    add(n("attn_k"), {s.n_kv_heads * s.head_dim, s.dim}, false);
    add(n("attn_v"), {s.n_kv_heads * s.head_dim, s.dim}, false);
    add(n("attn_q_norm"), {s.head_dim}, true);
    add(n("attn_k_norm"), {s.head_dim}, true);
    add(n("attn_output"), {s.dim, s.n_heads * s.head_dim}, false);
    add(n("ffn_norm"), {s.dim}, true);
    add(n("ffn_gate"), {s.ffn_dim, s.dim}, false);
    add(n("ffn_up"), {s.ffn_dim, s.dim}, false);
    add(n("ffn_down"), {s.dim, s.ffn_dim}, false);
  }
  add("output_norm.weight", {s.dim}, true);
  add("output.weight", {s.vocab, s.dim}, false);
  if (s.unseen != 0 || s.n_classes() != s.vocab) {
    std::vector<float> offset(s.vocab, 0.0f);
    std::fill(offset.begin() + s.n_classes(), offset.end(), -1e9f);
    if (s.unseen != 0)
      offset[s.n_classes() - 1] = static_cast<float>(std::log(static_cast<double>(s.unseen)));
    logit_offset_ = Tensor::from_vector(offset, {s.vocab}, dtypes::float32, device_).realize();
  }
}

Tensor& TrainableQwen3::add(const std::string& name, std::vector<int64_t> dims, bool norm) {
  Tensor w = norm ? Tensor::ones(dims, dtypes::float32, device_)
                  : Tensor::randn(dims, dtypes::float32, device_) * 0.02;
  params_.push_back(w.realize().requires_grad_());
  names_.push_back(name);
  return params_.back();
}

const Tensor& TrainableQwen3::param(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) internal_error("TrainableQwen3: no weight {}", name);
  return params_[it - names_.begin()];
}

Tensor TrainableQwen3::forward(const Tensor& tokens) const {
  const TrainShape& s = shape_;
  const int64_t batch = tokens.size(0), seq = tokens.size(1), rows = batch * seq;
  auto [cos, sin] = rope_tables(0, seq, s.head_dim, s.rope_theta, tokens.device());
  cos = cos.repeat({batch, 1, 1});
  sin = sin.repeat({batch, 1, 1});
  const Tensor mask = Tensor::full({seq, seq}, -std::numeric_limits<double>::infinity(),
                                   dtypes::float32, tokens.device())
                          .triu(1);
  const double scale = 1 / std::sqrt(static_cast<double>(s.head_dim));
  // Every activation a matmul reads is materialized (.contiguous()): its backward reads it again,
  // and a GEMM-shaped kernel is register-tiled only over plain loads (an unmaterialized residual
  // stream was recomputed from all earlier layers' outputs once per weight element).
  // The lookup as a matmul with a materialized one-hot matrix: forward and the table's gradient
  // are then two tiled GEMMs (Tensor::embedding's where-sum gradient is an untiled reduce over
  // the rows for every table element, 50x slower at a 24k-token table).
  const Tensor one_hot = tokens.reshape({rows}).one_hot(s.vocab).cast(dtypes::float32).contiguous();
  Tensor h = one_hot.matmul(param("token_embd.weight"));
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const auto w = [&](const char* what) -> const Tensor& {
      return param(fmt::format("blk.{}.{}.weight", l, what));
    };
    const Tensor x = rms_norm(h, w("attn_norm"), s.rms_eps).contiguous();
    const auto heads = [&](const char* proj, const char* norm, int64_t n) {
      Tensor t = x.linear(w(proj)).reshape({rows, n, s.head_dim});
      return rope(rms_norm(t, w(norm), s.rms_eps), cos, sin).contiguous();
    };
    // (batch, heads, seq, head_dim); each KV head serves n_heads / n_kv_heads query heads.
    const auto split = [&](const Tensor& t, int64_t n) {
      return t.reshape({batch, seq, n, s.head_dim}).permute({0, 2, 1, 3});
    };
    const int64_t group = s.n_heads / s.n_kv_heads;
    Tensor q = split(heads("attn_q", "attn_q_norm", s.n_heads), s.n_heads);
    Tensor k = split(heads("attn_k", "attn_k_norm", s.n_kv_heads), s.n_kv_heads)
                   .repeat_interleave(group, 1);
    Tensor v = split(x.linear(w("attn_v")).reshape({rows, s.n_kv_heads, s.head_dim}), s.n_kv_heads)
                   .repeat_interleave(group, 1);
    Tensor att = (q.matmul(k.transpose()) * scale + mask).softmax(-1).contiguous().matmul(v);
    h = (h + att.permute({0, 2, 1, 3})
                 .reshape({rows, s.n_heads * s.head_dim})
                 .contiguous()
                 .linear(w("attn_output")))
            .contiguous();
    const Tensor f = rms_norm(h, w("ffn_norm"), s.rms_eps).contiguous();
    h = (h + (f.linear(w("ffn_gate")).silu() * f.linear(w("ffn_up")))
                 .contiguous()
                 .linear(w("ffn_down")))
            .contiguous();
  }
  const Tensor out = rms_norm(h, param("output_norm.weight"), s.rms_eps).contiguous();
  Tensor logits = out.linear(param("output.weight")).reshape({batch, seq, s.vocab});
  return logit_offset_.defined() ? logits + logit_offset_ : logits;
}

Tensor TrainableQwen3::log_probs(const Tensor& tokens) const {
  return forward(tokens).log_softmax(-1);
}

Tensor TrainableQwen3::token_losses(const Tensor& log_probs, const Tensor& targets) const {
  Tensor nll = -log_probs.gather(2, targets.unsqueeze(2)).squeeze({2});
  if (shape_.unseen == 0) return nll;
  return nll + targets.eq(shape_.n_classes() - 1).cast(dtypes::float32) *
                   std::log(static_cast<double>(shape_.unseen));
}

Tensor TrainableQwen3::loss(const Tensor& tokens, const Tensor& targets) const {
  return token_losses(log_probs(tokens), targets).mean();
}

double TrainableQwen3::step_flops(int64_t tokens, int64_t seq) const {
  double weights = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].ndim() == 2 && names_[i] != "token_embd.weight")
      weights += static_cast<double>(params_[i].numel());
  const TrainShape& s = shape_;
  const double attention = static_cast<double>(s.n_layers * s.n_heads * s.head_dim) * 2.0 * 2.0 *
                           static_cast<double>(seq);
  return 3.0 * static_cast<double>(tokens) * (2.0 * weights + attention);
}

}  // namespace ugrad::llm
