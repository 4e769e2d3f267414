// GGUF reader: opens a GGUF v2/v3 file (or a set of split shards) by memory-mapping it (or reading
// it into huge-page memory, for a CPU that runs a model from it), validates
// every field before use, and exposes metadata and tensors without copying tensor data.
// Layout and rules: docs/gguf.md#file-layout and docs/gguf.md#loader-rules.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/gguf/mapped_file.h"
#include "llm/gguf/value.h"
#include "llm/quant/formats.h"

namespace ugrad::llm {

/// Default alignment of the tensor data section and of each tensor (when `general.alignment` is
/// absent).
inline constexpr uint32_t kGgufDefaultAlignment = 32;
/// ggml tensors have at most four dimensions.
inline constexpr uint32_t kGgufMaxDims = 4;

/// One metadata entry, in file order.
struct GgufKV {
  std::string_view key;
  GgufValue value;
};

/// One tensor record. `data` points into the mapping of the shard that holds it.
struct GgufTensor {
  std::string_view name;
  std::vector<uint64_t> dims;  // ne, innermost (contiguous) first
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;       // relative to its shard's data section
  uint64_t file_offset = 0;  // absolute position of the data in its shard's file
  uint64_t nbytes = 0;
  std::span<const uint8_t> data;
  uint32_t shard = 0;  // index of the split shard that holds the data (0 for single files)

  /// Product of the dims.
  uint64_t n_elements() const;
};

/// A parsed GGUF file (or all shards of a split file). Cheap to copy: the mappings are shared.
class GgufFile {
 public:
  /// Opens and validates a file, memory-mapped or read into huge-page memory (mapped_file.h). The
  /// first shard of a split file (`name-00001-of-0000N.gguf`) opens all shards and merges their
  /// tensor lists.
  static GgufFile open(const std::string& path, FileMemory how = FileMemory::Mapped,
                       const ReadProgress& progress = {});
  /// Parses a file image held in memory. The bytes are borrowed: keep them alive and unchanged
  /// while this object (or anything taken from it) is in use. Split keys are not followed.
  static GgufFile from_bytes(std::span<const uint8_t> bytes);
  /// As from_bytes, but takes ownership of the buffer.
  static GgufFile from_buffer(std::vector<uint8_t> bytes);

  /// GGUF version of the (first) file: 2 or 3.
  uint32_t version() const { return version_; }
  /// Alignment of the data section (`general.alignment` or 32).
  uint32_t alignment() const { return alignment_; }
  /// Number of shards (1 unless the file is split).
  uint32_t shard_count() const { return shard_count_; }

  /// All metadata of the (first) file, in file order.
  std::span<const GgufKV> metadata() const { return kv_; }
  /// True if the metadata has this key.
  bool has(std::string_view key) const;
  /// The value of a key, or nullptr.
  const GgufValue* find(std::string_view key) const;
  /// The value of a key; a missing key is an Error naming it.
  const GgufValue& get(std::string_view key) const;

  // Typed getters: an Error names the key and the actual type on a mismatch, and the value on an
  // integer that does not fit. Integer getters accept any integer type.
  /// Integer value as uint32.
  uint32_t get_u32(std::string_view key) const;
  /// Integer value as uint64.
  uint64_t get_u64(std::string_view key) const;
  /// Integer value as int32.
  int32_t get_i32(std::string_view key) const;
  /// Integer value as int64.
  int64_t get_i64(std::string_view key) const;
  /// FLOAT32 value (a FLOAT64 is narrowed).
  float get_f32(std::string_view key) const;
  /// FLOAT32 or FLOAT64 value as double.
  double get_f64(std::string_view key) const;
  /// BOOL value.
  bool get_bool(std::string_view key) const;
  /// STRING value (borrowed from the file).
  std::string_view get_string(std::string_view key) const;
  /// ARRAY value of any element type.
  const GgufArray& get_array(std::string_view key) const;
  /// Array of STRING (views into the file; no copy).
  std::span<const std::string_view> get_array_strings(std::string_view key) const;
  /// Array of any integer type, each element range-checked into int32.
  std::vector<int32_t> get_array_i32(std::string_view key) const;
  /// Array of any integer type, each element range-checked into uint32.
  std::vector<uint32_t> get_array_u32(std::string_view key) const;
  /// Array of any integer type as int64.
  std::vector<int64_t> get_array_i64(std::string_view key) const;
  /// Array of FLOAT32 (or FLOAT64, narrowed).
  std::vector<float> get_array_f32(std::string_view key) const;

  /// Integer value of a key, or `fallback` if the key is absent.
  uint32_t get_u32_or(std::string_view key, uint32_t fallback) const;
  /// Float value of a key, or `fallback` if the key is absent.
  float get_f32_or(std::string_view key, float fallback) const;

  /// All tensors, in record order (shard by shard for split files).
  std::span<const GgufTensor> tensors() const { return tensors_; }
  /// Keeps the memory every tensor's data points into alive while the returned handle lives
  /// (after this GgufFile is gone too).
  std::shared_ptr<const void> keepalive() const {
    return std::make_shared<const std::vector<std::shared_ptr<const void>>>(owners_);
  }
  /// The tensor with this name, or nullptr.
  const GgufTensor* find_tensor(std::string_view name) const;
  /// The tensor with this name; a missing one is an Error naming it.
  const GgufTensor& tensor(std::string_view name) const;

  // Used by the parser; not for general use.
  struct Shard;

 private:
  uint32_t version_ = 3;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint32_t shard_count_ = 1;
  std::vector<std::shared_ptr<const void>> owners_;  // mappings / buffers the views point into
  std::vector<GgufKV> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<GgufTensor> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;

  static GgufFile from_shards(std::vector<Shard> shards);
};

}  // namespace ugrad::llm
