// The tokenizer vocabulary as GGUF stores it (`tokenizer.ggml.*` keys), as plain data.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ugrad::llm {

using TokenId = int32_t;

/// `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <|im_start|> etc.: matched in text only when special tokens are allowed
  kUserDefined = 4,  // <think> etc.: always matched in text, never BPE-merged
  kUnused = 5,       // [PAD...] fillers
  kByte = 6,         // <0xAB> (SentencePiece byte fallback)
};

/// The `tokenizer.ggml.*` fields a byte-level BPE tokenizer is built from.
struct VocabData {
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens, byte-level text, index = id
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "A B", index = rank
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type; empty means all normal
  std::string pre = "qwen2";         // tokenizer.ggml.pre
  std::optional<TokenId> bos_id;     // tokenizer.ggml.bos_token_id
  std::optional<TokenId> eos_id;     // tokenizer.ggml.eos_token_id
  std::optional<TokenId> eot_id;     // tokenizer.ggml.eot_token_id
  std::optional<TokenId> pad_id;     // tokenizer.ggml.padding_token_id
};

/// Name of a token type for messages ("normal", "control", ...).
std::string_view token_type_name(TokenType type);

}  // namespace ugrad::llm
