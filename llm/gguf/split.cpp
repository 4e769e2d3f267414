#include "llm/gguf/split.h"

#include <fmt/format.h>

namespace ugrad::llm {
namespace {

constexpr std::string_view kSuffix = ".gguf";
constexpr size_t kDigits = 5;

// Parses exactly kDigits decimal digits.
std::optional<uint32_t> parse_digits(std::string_view s) {
  if (s.size() != kDigits) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

}  // namespace

std::string gguf_split_path(std::string_view prefix, uint32_t index, uint32_t count) {
  return fmt::format("{}-{:05d}-of-{:05d}{}", prefix, index + 1, count, kSuffix);
}

std::optional<GgufSplitName> parse_gguf_split_path(std::string_view path) {
  // "<prefix>-NNNNN-of-NNNNN.gguf": the tail is 1 + 5 + 4 + 5 + 5 characters.
  constexpr size_t kTail = 1 + kDigits + 4 + kDigits + kSuffix.size();
  if (path.size() <= kTail || !path.ends_with(kSuffix)) return std::nullopt;
  std::string_view tail = path.substr(path.size() - kTail);
  if (tail[0] != '-' || tail.substr(1 + kDigits, 4) != "-of-") return std::nullopt;
  auto no = parse_digits(tail.substr(1, kDigits));
  auto count = parse_digits(tail.substr(1 + kDigits + 4, kDigits));
  if (!no || !count || *no == 0 || *count == 0 || *no > *count) return std::nullopt;
  return GgufSplitName{std::string(path.substr(0, path.size() - kTail)), *no - 1, *count};
}

}  // namespace ugrad::llm
