// Pre-tokenizer: splits text into the pieces that BPE merges within (words, single digits,
// punctuation runs, whitespace runs), using the regex that llama.cpp uses for the vocabulary's
// `tokenizer.ggml.pre` name, run by PCRE2 in UTF + UCP mode (Unicode \p{L}, \p{N}, \s) with JIT.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ugrad::llm {

/// The pre-tokenizer regex for a `tokenizer.ggml.pre` name (`qwen2`, `qwen35`); throws Error for
/// names we do not know.
std::string_view pretokenizer_regex(std::string_view pre_name);

class PreTokenizer {
 public:
  /// Compiles (and JIT-compiles) the regex for a `tokenizer.ggml.pre` name.
  explicit PreTokenizer(std::string_view pre_name);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  /// Appends the pieces of `text` (valid UTF-8, checked by the caller) to `out`, in order; the
  /// pieces cover the text exactly (text not matched by the regex becomes a piece of its own).
  void split(std::string_view text, std::vector<std::string_view>& out) const;

  /// The `tokenizer.ggml.pre` name this pre-tokenizer was built for.
  const std::string& name() const { return name_; }

  /// True when the vocabulary's tokenizer normalizes text to NFC before splitting it (declared
  /// in its tokenizer.json, which GGUF does not carry: known from the name).
  bool normalizes_nfc() const { return nfc_; }

 private:
  struct Impl;
  std::string name_;
  bool nfc_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ugrad::llm
