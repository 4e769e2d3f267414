#include "base/quote.h"

#include <fmt/format.h>

namespace ugrad {

namespace {

// Length of the valid UTF-8 sequence at s[pos] (RFC 3629: no overlongs, surrogates or
// > U+10FFFF), or 0 when the bytes there are not one.
size_t utf8_length(std::string_view s, size_t pos) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  const uint8_t lead = at(0);
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // Unicode Table 3-7: the second byte's range depends on the lead
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3, lo = lead == 0xE0 ? 0xA0 : 0x80, hi = lead == 0xED ? 0x9F : 0xBF;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4, lo = lead == 0xF0 ? 0x90 : 0x80, hi = lead == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (pos + len > s.size()) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t i = 2; i < len; ++i)
    if ((at(i) & 0xC0) != 0x80) return 0;
  return len;
}

}  // namespace

std::string quote(std::string_view s, size_t max_bytes) {
  std::string out = "'";
  size_t pos = 0;
  while (pos < s.size() && pos < max_bytes) {
    const auto c = static_cast<uint8_t>(s[pos]);
    const size_t len = utf8_length(s, pos);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", c);
      pos += 1;
    } else if (len > 1) {
      // C1 controls (U+0080..U+009F, C2 80..C2 9F) move terminals around as C0 ones do.
      const auto second = static_cast<uint8_t>(s[pos + 1]);
      if (c == 0xC2 && second < 0xA0)
        out += fmt::format("\\u{:04x}", second);
      else
        out.append(s.substr(pos, len));
      pos += len;
    } else {
      switch (c) {
        case '\\':
          out += "\\\\";
          break;
        case '\'':
          out += "\\'";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          if (c < 0x20 || c == 0x7F)
            out += fmt::format("\\x{:02x}", c);
          else
            out += static_cast<char>(c);
      }
      pos += 1;
    }
  }
  out += '\'';
  if (pos < s.size()) {
    out.insert(out.size() - 1, "...");
    out += fmt::format(" ({} bytes)", s.size());
  }
  return out;
}

}  // namespace ugrad
