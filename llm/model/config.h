// Model configuration and weight index, read from GGUF metadata and tensor records and validated
// before anything runs. Keys, tensor names and shapes: ../shared/ref/gguf-quants-qwen.md §5
// (qwen3) and §8.1 (tokenizer ids). Only `qwen3` is read today; the other Qwen architectures have
// an enumerator and an optional section to fill in (§6).
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
  kQwen3Moe,   // "qwen3moe": not read yet
  kQwen35,     // "qwen35": Gated DeltaNet hybrid, not read yet
  kQwen35Moe,  // "qwen35moe": not read yet
};

/// The `general.architecture` string of an arch ("qwen3", ...).
std::string_view arch_name(ModelArch arch);
/// The arch with this `general.architecture` string, or nullopt.
std::optional<ModelArch> parse_arch(std::string_view name);

/// Mixture-of-experts FFN (qwen3moe, qwen35moe); absent for dense models. Not read yet.
struct MoeConfig {
  uint32_t n_experts = 0;       // {arch}.expert_count
  uint32_t n_experts_used = 0;  // {arch}.expert_used_count
  uint32_t expert_ffn_dim = 0;  // {arch}.expert_feed_forward_length
  uint32_t shared_ffn_dim = 0;  // {arch}.expert_shared_feed_forward_length (0: none)
};

/// Gated DeltaNet layers of the hybrid models (qwen35*); absent otherwise. Not read yet.
struct HybridConfig {
  uint32_t full_attention_interval = 0;  // {arch}.full_attention_interval
  uint32_t conv_kernel = 0;              // {arch}.ssm.conv_kernel
  uint32_t key_head_dim = 0;             // {arch}.ssm.state_size (d_k)
  uint32_t n_key_heads = 0;              // {arch}.ssm.group_count (H_k)
  uint32_t n_value_heads = 0;            // {arch}.ssm.time_step_rank (H_v)
  uint32_t value_dim = 0;                // {arch}.ssm.inner_size (H_v * d_v)
};

/// Hyperparameters of a model, validated for consistency. Sizes are element counts.
struct ModelConfig {
  ModelArch arch = ModelArch::kQwen3;
  uint32_t n_layers = 0;               // {arch}.block_count
  uint32_t dim = 0;                    // {arch}.embedding_length
  uint32_t n_heads = 0;                // {arch}.attention.head_count
  uint32_t n_kv_heads = 0;             // {arch}.attention.head_count_kv (default n_heads)
  uint32_t head_dim = 0;               // {arch}.attention.key_length (default dim / n_heads)
  uint32_t ffn_dim = 0;                // {arch}.feed_forward_length
  uint32_t vocab_size = 0;             // rows of token_embd.weight
  uint32_t context_length = 0;         // {arch}.context_length (the training context)
  uint32_t n_rot = 0;                  // {arch}.rope.dimension_count (default head_dim)
  float rms_eps = 0;                   // {arch}.attention.layer_norm_rms_epsilon
  float rope_theta = 0;                // {arch}.rope.freq_base (default 10000)
  bool tied_output = false;            // output.weight absent: logits use token_embd.weight
  std::optional<int32_t> bos_id;       // tokenizer.ggml.bos_token_id
  std::optional<int32_t> eos_id;       // tokenizer.ggml.eos_token_id
  std::optional<int32_t> eot_id;       // tokenizer.ggml.eot_token_id
  std::optional<int32_t> pad_id;       // tokenizer.ggml.padding_token_id
  std::optional<MoeConfig> moe;        // qwen3moe / qwen35moe only
  std::optional<HybridConfig> hybrid;  // qwen35* only

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

/// The GGUF tensors of one transformer block, by role. Pointers into the GgufFile.
struct LayerWeights {
  const GgufTensor* attn_norm = nullptr;    // blk.N.attn_norm.weight   [dim]
  const GgufTensor* attn_q = nullptr;       // blk.N.attn_q.weight      [dim, q_dim]
  const GgufTensor* attn_k = nullptr;       // blk.N.attn_k.weight      [dim, kv_dim]
  const GgufTensor* attn_v = nullptr;       // blk.N.attn_v.weight      [dim, kv_dim]
  const GgufTensor* attn_output = nullptr;  // blk.N.attn_output.weight [q_dim, dim]
  const GgufTensor* attn_q_norm = nullptr;  // blk.N.attn_q_norm.weight [head_dim]
  const GgufTensor* attn_k_norm = nullptr;  // blk.N.attn_k_norm.weight [head_dim]
  const GgufTensor* ffn_norm = nullptr;     // blk.N.ffn_norm.weight    [dim]
  const GgufTensor* ffn_gate = nullptr;     // blk.N.ffn_gate.weight    [dim, ffn_dim]
  const GgufTensor* ffn_up = nullptr;       // blk.N.ffn_up.weight      [dim, ffn_dim]
  const GgufTensor* ffn_down = nullptr;     // blk.N.ffn_down.weight    [ffn_dim, dim]
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
  /// use is an Error as well (it would mean the file is not what its metadata says).
  static ModelWeights from_gguf(const GgufFile& file, const ModelConfig& config);
};

/// The name of a per-layer tensor: `blk.{layer}.{role}.weight`.
std::string layer_tensor_name(uint32_t layer, std::string_view role);

}  // namespace ugrad::llm
