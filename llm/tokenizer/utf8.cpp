#include "llm/tokenizer/utf8.h"

namespace ugrad::llm {

namespace {
bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }
}  // namespace

Utf8Step utf8_step(std::string_view text, size_t pos) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = at(0);
  if (lead < 0x80) return {Utf8Step::kComplete, 1, lead};
  // Unicode Table 3-7: the allowed range of the second byte depends on the lead byte, which is
  // what rules out overlongs (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and > U+10FFFF.
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  uint32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3, cp = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4, cp = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {Utf8Step::kInvalid, 1, 0};
  }
  for (size_t i = 1; i < len; ++i) {
    if (pos + i >= text.size()) return {Utf8Step::kIncomplete, i, 0};
    const uint8_t b = at(i);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return {Utf8Step::kInvalid, i, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Step::kComplete, len, cp};
}

size_t utf8_invalid_offset(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // Fast path for ASCII runs.
    if (static_cast<uint8_t>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const Utf8Step step = utf8_step(text, pos);
    if (step.kind != Utf8Step::kComplete) return pos;
    pos += step.len;
  }
  return text.size();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace ugrad::llm
