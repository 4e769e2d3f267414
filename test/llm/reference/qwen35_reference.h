// An independent reference forward pass for the Qwen3.5/3.6 hybrid GGUF models
// (`general.architecture = qwen35`, and `qwen35moe` for the MoE FFN): plain loops, double-precision
// activations, states and accumulation, weights decoded once by the reference dequantizers.
// Written from the formulas of docs/qwen.md#gated-deltanet and docs/qwen.md#moe-ffn and sharing no
// code with ugrad's model (it reads its own hyperparameters from the metadata). Gated DeltaNet
// layers: causal depthwise conv with SiLU, L2-normalised q/k, q scaled by 1/sqrt(d_k), beta =
// sigmoid, decay = exp(ssm_a * softplus(alpha + dt_bias)), the delta rule per value head with value
// head h reading key head h mod H_k (the qwen35 GGUF convention), gated RMSNorm with SiLU(z). Full
// attention layers: per-head [q | gate] projection, q/k norms, NEOX RoPE on the first n_rot dims,
// sigmoid output gate. It also reads `qwen3moe` (qwen3 attention: no gate, whole-head RoPE,
// ffn_norm; all layers full attention) with the same MoE FFN. For small test models only.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "llm/gguf/gguf.h"
#include "test/llm/reference/reference_math.h"

namespace ugrad::llm::test {

/// One token of the gated delta rule for one value head (docs/qwen.md#gated-deltanet), in place:
///   M <- decay * M;  u = M k;  M <- M + beta * (v - u) (x) k;  out = M q.
/// `state` is M, d_v x d_k row-major (M[j * d_k + i], i over key dims); q (already scaled), k
/// have d_k entries, v and out d_v. beta = 0 with decay = 1 leaves the state unchanged (the
/// padding no-op of chunked prefill).
void gated_delta_step(std::span<double> state, std::span<const double> q, std::span<const double> k,
                      std::span<const double> v, double beta, double decay, std::span<double> out);

class ReferenceQwen35 {
 public:
  /// Hyperparameters as read from the metadata ({arch}.* keys).
  struct Hparams {
    uint32_t n_layers = 0;  // trunk layers: block_count - nextn_predict_layers
    uint32_t dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, n_rot = 0, ffn_dim = 0;
    uint32_t vocab = 0;
    uint32_t conv_kernel = 0, key_head_dim = 0, n_key_heads = 0, n_value_heads = 0;
    uint32_t value_head_dim = 0;
    uint32_t n_experts = 0, n_experts_used = 0, expert_ffn_dim = 0, shared_ffn_dim = 0;  // MoE
    double rms_eps = 0, rope_theta = 0;
    std::vector<bool> recurrent;  // per trunk layer: Gated DeltaNet (true) or full attention
  };

  /// Reads the hyperparameters and decodes every weight. The file may be released afterwards.
  explicit ReferenceQwen35(const GgufFile& file);

  /// Logits for `token` at position `pos`, carrying the KV cache and the conv and recurrent
  /// states. `pos` 0 starts over (resets every state); otherwise it must be the next position,
  /// since a recurrent state cannot be rewound.
  std::vector<float> forward(int32_t token, uint32_t pos);

  /// Logits at every position of `tokens`, layer by layer over the whole sequence with no cache:
  /// the conv reads the zero-padded sequence directly and the recurrence runs from a zero state.
  /// A second path to check forward() against.
  std::vector<std::vector<float>> forward_sequence(std::span<const int32_t> tokens) const;

  /// Empties the KV cache and zeroes the conv and recurrent states.
  void reset();

  /// Number of positions consumed since the last reset.
  uint32_t cached_positions() const { return n_cached_; }

  /// Feeds the prompt from position 0, then greedily appends `n_new` tokens (argmax, lowest id
  /// on ties). Returns only the generated tokens.
  std::vector<int32_t> greedy(std::span<const int32_t> prompt, uint32_t n_new);

  const Hparams& hparams() const { return hp_; }

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    Matrix wq, wk, wv, wo;  // full attention
    std::vector<float> q_norm, k_norm;
    // Gated DeltaNet; conv is [conv_dim][conv_kernel] (ggml ne = [K, conv_dim]).
    Matrix w_qkv, w_z, w_beta, w_alpha, w_out;  // Gated DeltaNet
    std::vector<float> conv, dt_bias, ssm_a, ssm_norm;
    Matrix w_gate, w_up, w_down;                               // dense FFN
    std::vector<float> router, gate_exps, up_exps, down_exps;  // MoE experts
    Matrix gate_shexp, up_shexp, down_shexp;                   // shared expert
    std::vector<float> gate_inp_shexp;
  };
  struct Attn;  // q, gate, k, v of one position
  struct Gdn;   // projections of one position

  Attn project_attention(const Layer& l, std::span<const double> h, uint32_t pos) const;
  Gdn project_gdn(const Layer& l, std::span<const double> h) const;
  std::vector<double> gdn_output(const Layer& l, const Gdn& p, std::span<const double> conv_out,
                                 std::vector<double>& state) const;
  std::vector<double> gated_output(const Layer& l, const Attn& p,
                                   std::span<const double> heads) const;
  void add_ffn(const Layer& l, std::span<double> x) const;
  std::vector<float> logits(std::span<const double> x) const;
  std::vector<double> embed(int32_t token) const;
  uint32_t conv_dim() const;

  Hparams hp_;
  std::vector<float> output_norm_;
  Matrix token_embd_, output_;  // output_ empty when tied
  std::vector<Layer> layers_;
  // Per layer: KV cache rows (full attention); the last conv_kernel-1 inputs of the conv and the
  // H_v recurrent states of d_v x d_k (Gated DeltaNet).
  std::vector<std::vector<double>> k_cache_, v_cache_, conv_state_, ssm_state_;
  uint32_t n_cached_ = 0;
  bool hybrid_ = true;  // qwen35*: gated attention, GDN layers, post_attention_norm
};

}  // namespace ugrad::llm::test
