// A Qwen3-architecture model with float32 weights that ugrad trains itself: the same blocks as the
// inference model (RMSNorm, NEOX RoPE, grouped-query causal attention with q/k norms, SwiGLU)
// over a batch of whole sequences, written with tensor ops so that backward() differentiates it.
// Its output head covers the first `vocab` token ids (a trainer maps the tokens of its corpus to
// those ids); with `unseen` > 0 the head's last class stands for that many other token ids at
// once (the ones a corpus never has), so the loss is the exact cross-entropy over the full
// vocabulary of `classes - 1 + unseen` tokens whose unseen ones share a row. Rows past `classes`
// are padding (never chosen) that round the table to a size the GEMM tiling divides.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ugrad::llm {

struct TrainShape {
  int64_t n_layers = 4, dim = 256, n_heads = 4, n_kv_heads = 2, head_dim = 64, ffn_dim = 768;
  int64_t vocab = 2048;
  /// Rows that are classes (0: all); the rest are padding with a logit of -1e9.
  int64_t classes = 0;
  /// Token ids that the last class stands for (0: every class is one token).
  int64_t unseen = 0;
  int64_t n_classes() const { return classes ? classes : vocab; }
  float rope_theta = 1000000.0f, rms_eps = 1e-6f;
};

class TrainableQwen3 {
 public:
  /// Weights drawn from `seed` (normal, std 0.02; norms 1), realized on `device`, requiring grad.
  /// An Error names a shape that is not positive or whose heads do not divide.
  TrainableQwen3(TrainShape shape, uint64_t seed, const std::string& device = "");
  /// Logits (batch, seq, vocab) for int32 `tokens` (batch, seq); with unseen > 0 the last class's
  /// is the log of the unseen tokens' summed weight (one token's logit + ln(unseen)).
  Tensor forward(const Tensor& tokens) const;
  /// log_softmax of forward(tokens): (batch, seq, vocab).
  Tensor log_probs(const Tensor& tokens) const;
  /// Cross-entropy (batch, seq) of each of `targets` (batch, seq) under `log_probs`; the last
  /// class (unseen > 0) is one of the unseen tokens, ln(unseen) less likely than the class.
  Tensor token_losses(const Tensor& log_probs, const Tensor& targets) const;
  /// Mean cross-entropy of predicting `targets` from `tokens`.
  Tensor loss(const Tensor& tokens, const Tensor& targets) const;
  /// Every weight, in a fixed order (their names in names()).
  const std::vector<Tensor>& params() const { return params_; }
  /// GGUF tensor names of params(), llama.cpp's (token_embd.weight, blk.0.attn_q.weight, ...).
  const std::vector<std::string>& names() const { return names_; }
  /// The weight of that GGUF name (an InternalError for a name it does not have).
  const Tensor& param(const std::string& name) const;
  const TrainShape& shape() const { return shape_; }
  /// Weights and activations' FLOPs of one training step on `tokens` tokens of length `seq`
  /// (forward and backward: 6 per weight per token plus attention's 12 * seq * dims).
  double step_flops(int64_t tokens, int64_t seq) const;

 private:
  Tensor& add(const std::string& name, std::vector<int64_t> dims, bool norm);
  TrainShape shape_;
  std::string device_;
  std::vector<Tensor> params_;
  std::vector<std::string> names_;
  Tensor logit_offset_;  // (vocab): ln(unseen) at the unseen class, -1e9 on padding; or none
};

}  // namespace ugrad::llm
