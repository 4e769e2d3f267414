// Streaming detokenizer: token ids go in one at a time, text comes out that is always valid
// UTF-8. A token may end inside a multi-byte character (byte-level BPE splits emoji and CJK across
// tokens); those bytes are held until the character is complete.
#pragma once
#include <span>
#include <string>

#include "llm/tokenizer/bpe.h"

namespace ugrad::llm {

class StreamDecoder {
 public:
  /// Decodes with `tokenizer`, which must outlive the decoder.
  explicit StreamDecoder(const BpeTokenizer& tokenizer, bool render_special = true)
      : tokenizer_(&tokenizer), render_special_(render_special) {}

  /// Feeds one token; returns the text that is now complete (possibly empty). Bytes that can
  /// never become valid UTF-8 come out as U+FFFD right away.
  std::string push(TokenId id);

  /// Ends the stream: returns the held bytes, an incomplete sequence becoming U+FFFD.
  std::string flush();

  /// Bytes held back because they may be the start of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const BpeTokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;
};

/// The text of `ids` as a StreamDecoder gives it when fed them all and flushed: valid UTF-8,
/// with bytes that never complete a character (an unfinished one at the end) as U+FFFD. What
/// ugrad prints as one piece (llm --json) uses this, so it matches the streamed text.
std::string decode_text(const BpeTokenizer& tokenizer, std::span<const TokenId> ids,
                        bool render_special = true);

/// Valid UTF-8 for `bytes`: each maximal invalid subpart becomes one U+FFFD (the WHATWG and
/// Unicode 3.9 "best practice"). An incomplete sequence at the end is replaced as well.
std::string sanitize_utf8(std::string_view bytes);

}  // namespace ugrad::llm
