// Split GGUF files: shard names `<prefix>-00001-of-00003.gguf` (1-based in the name) and the
// `split.*` metadata keys that every shard carries (split.no is 0-based).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ugrad::llm {

inline constexpr std::string_view kGgufSplitNo = "split.no";                       // u16, 0-based
inline constexpr std::string_view kGgufSplitCount = "split.count";                 // u16
inline constexpr std::string_view kGgufSplitTensorsCount = "split.tensors.count";  // i32
/// Largest shard count the five-digit names and the u16 keys allow.
inline constexpr uint32_t kGgufMaxShards = 65535;

/// A shard path taken apart: `prefix` is everything before "-NNNNN-of-NNNNN.gguf".
struct GgufSplitName {
  std::string prefix;
  uint32_t index = 0;  // 0-based
  uint32_t count = 0;
};

/// The path of shard `index` (0-based) of `count`: "<prefix>-%05d-of-%05d.gguf".
std::string gguf_split_path(std::string_view prefix, uint32_t index, uint32_t count);
/// Parses a shard path; nullopt if it does not follow the pattern.
std::optional<GgufSplitName> parse_gguf_split_path(std::string_view path);

}  // namespace ugrad::llm
