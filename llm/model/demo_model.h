// Writes small Qwen3-architecture GGUF models with seeded random weights, for tests and for the
// README's demo. They carry the metadata llama.cpp's converter writes for qwen3
// (../shared/ref/gguf-quants-qwen.md §5.1, §8.1) and say in general.name/description that their
// output is meaningless.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "llm/gguf/writer.h"
#include "llm/quant/formats.h"
#include "llm/tokenizer/vocab.h"

namespace ugrad::llm {

/// Shape, weight type and vocabulary of a demo model.
struct DemoModelOptions {
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
  /// No output.weight: logits use token_embd (as Qwen3-0.6B/1.7B/4B).
  bool tied_output = true;
  uint64_t seed = 0;
  /// nullopt: the synthetic byte-level vocabulary (synthetic_vocab()).
  std::optional<VocabData> vocab;
  /// Written as tokenizer.chat_template when not empty.
  std::string chat_template;
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
