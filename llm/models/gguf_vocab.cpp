#include "llm/models/gguf_vocab.h"

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {

VocabData vocab_from_gguf(const GgufFile& file) {
  if (!file.has("tokenizer.ggml.tokens"))
    fail("gguf: the model has no tokenizer (tokenizer.ggml.tokens)");
  if (file.has("tokenizer.ggml.model") && file.get_string("tokenizer.ggml.model") != "gpt2")
    fail("gguf: tokenizer.ggml.model {} is not supported (only gpt2 byte-level BPE)",
         quote(file.get_string("tokenizer.ggml.model")));
  VocabData v;
  for (std::string_view t : file.get_array_strings("tokenizer.ggml.tokens"))
    v.tokens.emplace_back(t);
  if (file.has("tokenizer.ggml.merges"))
    for (std::string_view m : file.get_array_strings("tokenizer.ggml.merges"))
      v.merges.emplace_back(m);
  if (file.has("tokenizer.ggml.token_type"))
    v.token_types = file.get_array_i32("tokenizer.ggml.token_type");
  if (file.has("tokenizer.ggml.pre")) v.pre = file.get_string("tokenizer.ggml.pre");
  auto id = [&](const char* key) -> std::optional<TokenId> {
    if (!file.has(key)) return std::nullopt;
    return static_cast<TokenId>(file.get_u32(key));
  };
  v.bos_id = id("tokenizer.ggml.bos_token_id");
  v.eos_id = id("tokenizer.ggml.eos_token_id");
  v.eot_id = id("tokenizer.ggml.eot_token_id");
  v.pad_id = id("tokenizer.ggml.padding_token_id");
  return v;
}

}  // namespace ugrad::llm
