// Model configuration and weight index, read from GGUF metadata and tensor records and validated
// before anything runs. Keys, tensor names and shapes: docs/qwen.md (#qwen3-metadata and
// #qwen3-tensors for qwen3; #qwen35-metadata, #qwen35-tensors and #moe-ffn for qwen35 hybrid,
// qwen35moe, qwen3moe; #tokenizer-keys for tokenizer ids). qwen3next is not read (its fused
// ssm_ba/ssm_in layout and grouped head mapping differ, docs/qwen.md#architectures).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/gguf/gguf.h"

namespace ugrad::llm {

/// The model families ugrad knows by their `general.architecture` name.
enum class ModelArch {
  kQwen3,      // "qwen3": dense transformer
  kQwen3Moe,   // "qwen3moe": qwen3 attention, MoE FFN
  kQwen35,     // "qwen35": Gated DeltaNet / gated-attention hybrid, dense FFN
  kQwen35Moe,  // "qwen35moe": qwen35 mixers, MoE FFN
};

/// The `general.architecture` string of an arch ("qwen3", ...).
std::string_view arch_name(ModelArch arch);
/// The arch with this `general.architecture` string, or nullopt.
std::optional<ModelArch> parse_arch(std::string_view name);

/// Mixture-of-experts FFN (qwen3moe, qwen35moe); absent for dense models (docs/qwen.md#moe-ffn).
struct MoeConfig {
  uint32_t n_experts = 0;       // {arch}.expert_count
  uint32_t n_experts_used = 0;  // {arch}.expert_used_count
  uint32_t expert_ffn_dim = 0;  // {arch}.expert_feed_forward_length
  uint32_t shared_ffn_dim = 0;  // {arch}.expert_shared_feed_forward_length (0: none)
};

/// Gated DeltaNet layers of the hybrid models (qwen35*); absent otherwise
/// (docs/qwen.md#qwen35-metadata). In qwen35* GGUFs value head h reads key head h mod n_key_heads
/// (the converter's tiled reorder, docs/qwen.md#converter-transformations).
struct HybridConfig {
  uint32_t full_attention_interval = 0;  // {arch}.full_attention_interval (default 4)
  uint32_t conv_kernel = 0;              // {arch}.ssm.conv_kernel
  uint32_t key_head_dim = 0;             // {arch}.ssm.state_size (d_k)
  uint32_t n_key_heads = 0;              // {arch}.ssm.group_count (H_k)
  uint32_t n_value_heads = 0;            // {arch}.ssm.time_step_rank (H_v)
  uint32_t value_dim = 0;                // {arch}.ssm.inner_size (H_v * d_v)
  uint32_t n_nextn_layers = 0;           // {arch}.nextn_predict_layers: MTP blocks, skipped
  /// Per trunk layer: true for Gated DeltaNet, false for gated full attention. From
  /// {arch}.attention.recurrent_layers if present, else layer i is full attention iff
  /// (i + 1) % full_attention_interval == 0.
  std::vector<bool> recurrent;

  /// d_v = value_dim / n_value_heads.
  uint32_t value_head_dim() const { return value_dim / n_value_heads; }
  /// H_k * d_k: width of the q (or k) part of attn_qkv.
  uint32_t key_dim() const { return n_key_heads * key_head_dim; }
  /// 2 * key_dim + value_dim: channels of attn_qkv and of the causal conv.
  uint32_t conv_dim() const { return 2 * key_dim() + value_dim; }
};

/// Hyperparameters of a model, validated for consistency. Sizes are element counts.
struct ModelConfig {
  ModelArch arch = ModelArch::kQwen3;
  uint32_t n_layers = 0;               // {arch}.block_count, less the qwen35 MTP tail layers
  uint32_t dim = 0;                    // {arch}.embedding_length
  uint32_t n_heads = 0;                // {arch}.attention.head_count
  uint32_t n_kv_heads = 0;             // {arch}.attention.head_count_kv (default n_heads)
  uint32_t head_dim = 0;               // {arch}.attention.key_length (default dim / n_heads)
  uint32_t ffn_dim = 0;                // {arch}.feed_forward_length (0 for MoE models)
  uint32_t vocab_size = 0;             // rows of token_embd.weight
  uint32_t context_length = 0;         // {arch}.context_length (the training context)
  uint32_t n_rot = 0;                  // {arch}.rope.dimension_count (default head_dim);
                                       // qwen35*: rotate only the first n_rot dims of a head
  float rms_eps = 0;                   // {arch}.attention.layer_norm_rms_epsilon
  float rope_theta = 0;                // {arch}.rope.freq_base (default 10000)
  bool tied_output = false;            // output.weight absent: logits use token_embd.weight
  std::optional<int32_t> bos_id;       // tokenizer.ggml.bos_token_id
  std::optional<int32_t> eos_id;       // tokenizer.ggml.eos_token_id
  std::optional<int32_t> eot_id;       // tokenizer.ggml.eot_token_id
  std::optional<int32_t> pad_id;       // tokenizer.ggml.padding_token_id
  std::optional<MoeConfig> moe;        // qwen3moe / qwen35moe only
  std::optional<HybridConfig> hybrid;  // qwen35* only

  /// Full-attention layers have the qwen35 per-head [q | gate] projection and sigmoid gate.
  bool gated_attention() const { return hybrid.has_value(); }
  /// True if layer `layer` is a Gated DeltaNet layer (never for non-hybrid models).
  bool is_recurrent(uint32_t layer) const { return hybrid && hybrid->recurrent.at(layer); }

  /// Query heads per KV head (n_heads / n_kv_heads).
  uint32_t group_size() const { return n_heads / n_kv_heads; }
  /// Width of the concatenated query heads (n_heads * head_dim).
  uint32_t q_dim() const { return n_heads * head_dim; }
  /// Width of the concatenated key (or value) heads (n_kv_heads * head_dim).
  uint32_t kv_dim() const { return n_kv_heads * head_dim; }

  /// Reads and validates the metadata of a GGUF model (and the presence of output.weight and the
  /// vocabulary size from token_embd.weight). An Error names the key and its value on anything
  /// missing, out of range or inconsistent, and names the architecture if it is not supported.
  static ModelConfig from_gguf(const GgufFile& file);
};

/// The GGUF tensors of one transformer block, by role. Pointers into the GgufFile; roles a layer
/// does not have stay null. Full-attention layers fill attn_q..attn_k_norm, Gated DeltaNet layers
/// attn_qkv..ssm_out, dense FFNs ffn_gate/up/down, MoE FFNs the *_exps / *_shexp roles.
struct LayerWeights {
  const GgufTensor* attn_norm = nullptr;  // blk.N.attn_norm.weight   [dim]
  // Full attention. qwen35*: attn_q is [dim, 2*q_dim], per head [q_h | gate_h].
  const GgufTensor* attn_q = nullptr;       // blk.N.attn_q.weight      [dim, q_dim]
  const GgufTensor* attn_k = nullptr;       // blk.N.attn_k.weight      [dim, kv_dim]
  const GgufTensor* attn_v = nullptr;       // blk.N.attn_v.weight      [dim, kv_dim]
  const GgufTensor* attn_output = nullptr;  // blk.N.attn_output.weight [q_dim, dim]
  const GgufTensor* attn_q_norm = nullptr;  // blk.N.attn_q_norm.weight [head_dim]
  const GgufTensor* attn_k_norm = nullptr;  // blk.N.attn_k_norm.weight [head_dim]
  // Gated DeltaNet (qwen35*; docs/qwen.md#qwen35-tensors). conv_dim = 2*H_k*d_k + H_v*d_v.
  const GgufTensor* attn_qkv = nullptr;    // blk.N.attn_qkv.weight   [dim, conv_dim] q|k|v rows
  const GgufTensor* attn_gate = nullptr;   // blk.N.attn_gate.weight  [dim, H_v*d_v] (z)
  const GgufTensor* ssm_conv1d = nullptr;  // blk.N.ssm_conv1d.weight [conv_kernel, conv_dim]
  const GgufTensor* ssm_dt = nullptr;      // blk.N.ssm_dt.bias       [H_v] (dt_bias)
  const GgufTensor* ssm_a = nullptr;       // blk.N.ssm_a             [H_v] (already -exp(A_log))
  const GgufTensor* ssm_beta = nullptr;    // blk.N.ssm_beta.weight   [dim, H_v]
  const GgufTensor* ssm_alpha = nullptr;   // blk.N.ssm_alpha.weight  [dim, H_v]
  const GgufTensor* ssm_norm = nullptr;    // blk.N.ssm_norm.weight   [d_v] (not +1-shifted)
  const GgufTensor* ssm_out = nullptr;     // blk.N.ssm_out.weight    [H_v*d_v, dim]
  // Pre-FFN norm: blk.N.ffn_norm.weight, or blk.N.post_attention_norm.weight for qwen35*.
  const GgufTensor* ffn_norm = nullptr;  // [dim]
  const GgufTensor* ffn_gate = nullptr;  // blk.N.ffn_gate.weight    [dim, ffn_dim]
  const GgufTensor* ffn_up = nullptr;    // blk.N.ffn_up.weight      [dim, ffn_dim]
  const GgufTensor* ffn_down = nullptr;  // blk.N.ffn_down.weight    [ffn_dim, dim]
  // MoE FFN (docs/qwen.md#moe-ffn); E = n_experts, F = expert_ffn_dim, S = shared_ffn_dim.
  const GgufTensor* ffn_gate_inp = nullptr;        // blk.N.ffn_gate_inp.weight   [dim, E] router
  const GgufTensor* ffn_gate_exps = nullptr;       // blk.N.ffn_gate_exps.weight  [dim, F, E]
  const GgufTensor* ffn_up_exps = nullptr;         // blk.N.ffn_up_exps.weight    [dim, F, E]
  const GgufTensor* ffn_down_exps = nullptr;       // blk.N.ffn_down_exps.weight  [F, dim, E]
  const GgufTensor* ffn_gate_shexp = nullptr;      // blk.N.ffn_gate_shexp.weight [dim, S]
  const GgufTensor* ffn_up_shexp = nullptr;        // blk.N.ffn_up_shexp.weight   [dim, S]
  const GgufTensor* ffn_down_shexp = nullptr;      // blk.N.ffn_down_shexp.weight [S, dim]
  const GgufTensor* ffn_gate_inp_shexp = nullptr;  // blk.N.ffn_gate_inp_shexp.weight [dim]
};

/// Every tensor of a model by role, checked against its config. Holds pointers into the GgufFile
/// it was built from, which must outlive it (copies of the GgufFile do not keep them valid).
struct ModelWeights {
  const GgufTensor* token_embd = nullptr;   // token_embd.weight  [dim, vocab]
  const GgufTensor* output_norm = nullptr;  // output_norm.weight [dim]
  const GgufTensor* output = nullptr;       // output.weight [dim, vocab], or token_embd if tied
  std::vector<LayerWeights> layers;

  /// Finds every tensor the config calls for and checks its dims and that its type can be
  /// dequantized; an Error names the tensor and what disagrees. A tensor the architecture does not
  /// use is an Error as well (it would mean the file is not what its metadata says), except the
  /// tensors of qwen35 MTP tail layers (blk.N with N >= n_layers), which are skipped.
  static ModelWeights from_gguf(const GgufFile& file, const ModelConfig& config);
};

/// The name of a per-layer tensor: `blk.{layer}.{role}.weight`.
std::string layer_tensor_name(uint32_t layer, std::string_view role);

}  // namespace ugrad::llm
