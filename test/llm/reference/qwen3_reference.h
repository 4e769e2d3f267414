// An independent reference forward pass for Qwen3 dense GGUF models (`general.architecture =
// qwen3`): plain loops, double-precision activations and accumulation, weights decoded once by the
// reference dequantizers. Written from the formulas of docs/qwen.md#qwen3-forward (llama.cpp's
// qwen3 graph) and deliberately shares no code with ugrad's model: it reads its own hyperparameters
// from the metadata. It is the oracle the ugrad model is tested against; it is meant for small test
// models (every weight is held as f32).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "llm/gguf/gguf.h"
#include "test/llm/reference/reference_math.h"

namespace ugrad::llm::test {

/// Rotates one head vector in place by NEOX RoPE at position `pos`: pairs (i, i + n/2) for
/// i < n/2 turn by pos * theta^(-2i/n).
void rope_neox(std::span<double> head, uint32_t pos, double theta);

/// RMSNorm: x / sqrt(mean(x^2) + eps) * weight, in place.
void rms_norm(std::span<double> x, std::span<const float> weight, double eps);

class ReferenceQwen3 {
 public:
  /// Hyperparameters as read from the metadata (qwen3.* keys; defaults as llama.cpp's).
  struct Hparams {
    uint32_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0;
    uint32_t vocab = 0;
    double rms_eps = 0, rope_theta = 0;
  };

  /// Reads the hyperparameters and decodes every weight. The file may be released afterwards.
  explicit ReferenceQwen3(const GgufFile& file);

  /// Logits for `token` at position `pos`, attending over the KV cache of positions [0, pos).
  /// `pos` may be at most the number of cached positions; later entries are dropped first, so
  /// a smaller `pos` rewinds the cache.
  std::vector<float> forward(int32_t token, uint32_t pos);

  /// Logits at every position of `tokens`, computed layer by layer over the whole sequence with
  /// an explicit causal mask and no cache: a second path to check forward() against.
  std::vector<std::vector<float>> forward_sequence(std::span<const int32_t> tokens) const;

  /// Empties the KV cache.
  void reset();

  /// Number of positions in the KV cache.
  uint32_t cached_positions() const { return n_cached_; }

  /// Feeds the prompt from position 0 (after a reset), then greedily appends `n_new` tokens
  /// (argmax, lowest id on ties). Returns only the generated tokens.
  std::vector<int32_t> greedy(std::span<const int32_t> prompt, uint32_t n_new);

  const Hparams& hparams() const { return hp_; }

 private:
  struct Layer {
    std::vector<float> attn_norm, q_norm, k_norm, ffn_norm;
    Matrix wq, wk, wv, wo, w_gate, w_up, w_down;
  };
  struct Projections;  // q, k, v of one position

  Projections project_qkv(const Layer& l, std::span<const double> x, uint32_t pos) const;
  void add_attention_output(const Layer& l, std::span<const double> heads,
                            std::span<double> x) const;
  void add_ffn(const Layer& l, std::span<double> x) const;
  std::vector<float> logits(std::span<const double> x) const;
  std::vector<double> embed(int32_t token) const;

  Hparams hp_;
  std::vector<float> output_norm_;
  Matrix token_embd_, output_;  // output_ empty when tied
  std::vector<Layer> layers_;
  // KV cache per layer: n_cached_ rows of n_kv_heads * head_dim, after RoPE.
  std::vector<std::vector<double>> k_cache_, v_cache_;
  uint32_t n_cached_ = 0;
};

}  // namespace ugrad::llm::test
