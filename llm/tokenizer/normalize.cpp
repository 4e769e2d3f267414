#include "llm/tokenizer/normalize.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "base/error.h"

namespace ugrad::llm {

namespace {
// UTF-8 lead byte of U+0300 COMBINING GRAVE ACCENT, the first code point that NFC can change
// (a combining mark); every byte of a code point below it is smaller.
constexpr uint8_t kFirstNfcSensitiveLead = 0xCC;
}  // namespace

bool is_nfc_quick(std::string_view text) {
  for (char c : text)
    if (static_cast<uint8_t>(c) >= kFirstNfcSensitiveLead) return false;
  return true;
}

std::string to_nfc(std::string_view text) {
  if (is_nfc_quick(text)) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  // Without UTF8PROC_NULLTERM the length bounds the input, so a NUL is a character like any other.
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  if (n < 0) fail("tokenizer: NFC normalization failed: {}", utf8proc_errmsg(n));
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

}  // namespace ugrad::llm
