// Internal: parses and validates one GGUF image (one file or one shard of a split file).
#pragma once
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "llm/gguf/gguf.h"

namespace ugrad::llm {

/// One parsed GGUF image. Views (keys, strings, tensor data) point into `bytes`.
struct GgufFile::Shard {
  std::shared_ptr<const void> owner;  // keeps `bytes` alive
  std::span<const uint8_t> bytes;
  uint32_t version = 0;
  uint32_t alignment = kGgufDefaultAlignment;
  uint64_t data_start = 0;
  std::vector<GgufKV> kv;
  std::vector<GgufTensor> tensors;

  /// The value of a key in this shard, or nullptr.
  const GgufValue* find(std::string_view key) const;
};

/// GGUF magic, "GGUF" read as a little-endian u32.
inline constexpr uint32_t kGgufMagic = 0x46554747;
/// Arrays nested deeper than this are rejected (the parser recurses once per level).
inline constexpr uint32_t kGgufMaxArrayDepth = 8;

/// Parses and validates `bytes`. `source` (a path, or empty) prefixes every error message.
GgufFile::Shard parse_gguf(std::span<const uint8_t> bytes, std::string_view source);

}  // namespace ugrad::llm
