#include "llm/tokenizer/byte_unicode.h"

#include <array>

#include "llm/tokenizer/utf8.h"

namespace ugrad::llm {

namespace {

// Highest code point used by the alphabet: 256 + 67 (68 remapped bytes).
constexpr uint32_t kMaxAlphabetCodepoint = 0x143;

bool maps_to_itself(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Alphabet {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, kMaxAlphabetCodepoint + 1> to_byte{};
  Alphabet() {
    to_byte.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      to_cp[b] = maps_to_itself(b) ? b : next++;
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet table;
  return table;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return alphabet().to_cp[b]; }

std::optional<uint8_t> codepoint_to_byte(uint32_t cp) {
  if (cp > kMaxAlphabetCodepoint || alphabet().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(alphabet().to_byte[cp]);
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
  return out;
}

std::optional<std::string> byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step step = utf8_step(text, pos);
    if (step.kind != Utf8Step::kComplete) return std::nullopt;
    const std::optional<uint8_t> b = codepoint_to_byte(step.codepoint);
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
    pos += step.len;
  }
  return out;
}

}  // namespace ugrad::llm
