// UTF-8 helpers shared by the tokenizer: strict validation (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF) and code point encoding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ugrad::llm {

/// Result of looking at the UTF-8 sequence that starts at one byte.
struct Utf8Step {
  enum Kind { kComplete, kIncomplete, kInvalid } kind;
  /// kComplete: bytes in the sequence; kInvalid: bytes in the maximal invalid subpart (>= 1);
  /// kIncomplete: bytes present so far (a valid prefix cut off by the end of the input).
  size_t len;
  /// The decoded code point when kind == kComplete.
  uint32_t codepoint;
};

/// Classifies the UTF-8 sequence starting at text[pos] (pos < text.size()).
Utf8Step utf8_step(std::string_view text, size_t pos);

/// Offset of the first byte that is not part of valid UTF-8, or text.size() when all is valid.
size_t utf8_invalid_offset(std::string_view text);

/// Appends the UTF-8 encoding of a code point (<= U+10FFFF, not a surrogate).
void append_utf8(std::string& out, uint32_t codepoint);

/// U+FFFD REPLACEMENT CHARACTER, written in place of bytes that are not valid UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace ugrad::llm
