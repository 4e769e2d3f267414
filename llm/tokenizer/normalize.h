// Unicode normalization of text before pre-tokenization, as the Hugging Face tokenizer.json of a
// vocabulary declares it (Qwen2/2.5/3/3.5: NFC). GGUF has no key for the normalizer, so it is
// known from `tokenizer.ggml.pre` (PreTokenizer::normalizes_nfc()). Done by utf8proc.
#pragma once
#include <string>
#include <string_view>

namespace ugrad::llm {

/// True when `text` (valid UTF-8) is certainly in NFC without looking it up: every code point is
/// below U+0300, where no character decomposes, reorders or composes with what precedes it.
bool is_nfc_quick(std::string_view text);

/// `text` (valid UTF-8, checked by the caller) in Unicode Normalization Form C.
std::string to_nfc(std::string_view text);

}  // namespace ugrad::llm
