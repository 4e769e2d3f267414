// Writes small Qwen-family GGUF models with seeded random weights, for tests and for the README's
// demo: qwen3 (dense), qwen3moe, qwen35 (Gated DeltaNet hybrid) and qwen35moe. They carry the
// metadata and tensors llama.cpp's converter writes for the architecture (docs/qwen.md:
// #qwen3-metadata, #qwen35-metadata, #qwen35-tensors, #tokenizer-keys) and say in
// general.name/description that their output is meaningless, unless a trainer hands in the
// weights (and the name and description) of a model it trained.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llm/config/config.h"
#include "llm/gguf/writer.h"
#include "llm/quant/formats.h"
#include "llm/tokenizer/vocab.h"

namespace ugrad::llm {

/// Shape, weight type and vocabulary of a demo model.
struct DemoModelOptions {
  ModelArch arch = ModelArch::kQwen3;
  /// Trunk layers (qwen35*: not counting the MTP tail, see nextn_layers).
  uint32_t n_layers = 2;
  uint32_t dim = 64;
  uint32_t n_heads = 4;
  uint32_t n_kv_heads = 2;
  uint32_t head_dim = 16;
  uint32_t ffn_dim = 128;
  uint32_t context_length = 4096;
  /// Rows of token_embd; 0 means the vocabulary's size. Larger pads with `[PADn]` unused tokens.
  uint32_t vocab_size = 0;
  float rope_theta = 1000000.0f;
  float rms_eps = 1e-6f;
  /// Type of every matrix (token_embd, output, projections); norms stay F32 as in llama.cpp.
  GgmlType weight_type = GgmlType::F32;
  /// A llama-quantize preset ("Q4_K_M", "IQ4_XS", ...; llm/quant/presets.h): each matrix gets the
  /// type llama-quantize gives it (the file's real type mixture) instead of weight_type.
  std::string preset;
  /// With a preset: the block count its rule sees (0: the file's own) and the block each of the
  /// file's blocks stands for in it (empty: itself), so that a file of a few layers carries the
  /// types that those layers have at their place in a larger model.
  uint32_t preset_blocks = 0;
  std::vector<uint32_t> preset_layers;
  /// No output.weight: logits use token_embd (as Qwen3-0.6B/1.7B/4B).
  bool tied_output = true;
  uint64_t seed = 0;
  /// 0: every row of every tensor drawn. n: only n rows per tensor drawn and quantized, repeated
  /// over the rest: writes benchmark models of real size in seconds (kernel timings do not depend
  /// on the values; the model's outputs are then meaningless).
  uint32_t distinct_rows = 0;

  // qwen35 / qwen35moe only.
  /// Rotated dims per head; 0 means head_dim / 4 (Qwen3.5's partial_rotary_factor 0.25).
  uint32_t n_rot = 0;
  /// Layer i is full attention iff (i + 1) % full_attention_interval == 0.
  uint32_t full_attention_interval = 4;
  uint32_t conv_kernel = 4;          // ssm.conv_kernel
  uint32_t ssm_key_heads = 2;        // H_k (ssm.group_count)
  uint32_t ssm_value_heads = 4;      // H_v (ssm.time_step_rank); a multiple of H_k
  uint32_t ssm_key_head_dim = 16;    // d_k (ssm.state_size)
  uint32_t ssm_value_head_dim = 16;  // d_v (ssm.inner_size / H_v)
  /// MTP blocks appended after the trunk (nextn_predict_layers); readers skip them.
  uint32_t nextn_layers = 0;

  // qwen3moe / qwen35moe only. The router and the shared-expert gate stay F32.
  uint32_t n_experts = 8;
  uint32_t n_experts_used = 2;
  uint32_t expert_ffn_dim = 32;
  /// Shared expert width (qwen35moe); qwen3moe has none.
  uint32_t shared_ffn_dim = 32;
  /// nullopt: the synthetic byte-level vocabulary (synthetic_vocab()).
  std::optional<VocabData> vocab;
  /// Written as tokenizer.chat_template when not empty.
  std::string chat_template;
  /// Trained values by GGUF tensor name (ggml order: the innermost dim contiguous), quantized to
  /// the tensor's type; a tensor not named here is drawn. An Error names a wrong element count.
  std::map<std::string, std::vector<float>> weights;
  /// general.name / general.description; empty: the random-weights wording.
  std::string name, description;
};

/// A tiny byte-level BPE vocabulary: the 256 byte tokens (GPT-2 byte-level text), a few merges
/// with their merged tokens, then the Qwen special tokens <|endoftext|>, <|im_start|>,
/// <|im_end|> (control) and <think>, </think> (user-defined); bos = pad = <|endoftext|>,
/// eos = eot = <|im_end|>.
VocabData synthetic_vocab();

/// Reads a vocabulary in the text form scripts/tokenizer_reference.sh writes
/// (`tokenizer_ref/qwen3_vocab.txt`: "pre NAME", "bos|eos|eot|pad ID", "tokens N" + N lines
/// "TYPE HEX", "merges M" + M lines "HEX"). An Error names the path and the bad line.
VocabData read_vocab_text(const std::string& path);

/// The model as a GgufWriter, ready to write. An Error names the option that is out of range or
/// a size that is not a multiple of the weight type's block size.
GgufWriter build_demo_model(const DemoModelOptions& options);

/// build_demo_model(options).write(path).
void write_demo_model(const std::string& path, const DemoModelOptions& options);

}  // namespace ugrad::llm
