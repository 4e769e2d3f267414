// The tokenizer of a GGUF model, from its tokenizer.ggml.* metadata.
#pragma once
#include "llm/gguf/gguf.h"
#include "llm/tokenizer/bpe.h"

namespace ugrad::llm {

/// The vocabulary fields of a GGUF file; an Error names the missing or malformed key.
VocabData vocab_from_gguf(const GgufFile& file);

}  // namespace ugrad::llm
