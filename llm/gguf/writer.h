// GGUF writer: metadata of every type and tensors, written as GGUF v3 in the layout ggml's reader
// requires (tensor offsets are the aligned running sum of sizes in record order), to a buffer, a
// file, or a set of split shards.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/gguf/value.h"
#include "llm/quant/formats.h"

namespace ugrad::llm {

/// ggml's tensor names hold at most 63 bytes (GGML_MAX_NAME = 64 with the terminator).
inline constexpr size_t kGgufMaxTensorName = 63;

/// Where write_split cuts shards; 0 means no limit. A shard always holds at least one tensor.
struct GgufSplitLimits {
  uint64_t max_tensors = 0;
  uint64_t max_bytes = 0;  // tensor data bytes per shard
};

class GgufWriter {
 public:
  GgufWriter() = default;

  /// Sets a key to any value (arrays and nested arrays included); the value is encoded at once,
  /// so its strings need only live for this call. Setting a key again replaces its value.
  void set(std::string_view key, const GgufValue& value);
  /// Sets a scalar key; the C++ type picks the GGUF type (uint8_t is UINT8, bool is BOOL, ...).
  template <typename T>
  void set_scalar(std::string_view key, T v) {
    set(key, GgufValue(v));
  }
  void set_u32(std::string_view key, uint32_t v) { set_scalar(key, v); }
  void set_i32(std::string_view key, int32_t v) { set_scalar(key, v); }
  void set_u64(std::string_view key, uint64_t v) { set_scalar(key, v); }
  void set_f32(std::string_view key, float v) { set_scalar(key, v); }
  void set_bool(std::string_view key, bool v) { set_scalar(key, v); }
  /// Sets a STRING key.
  void set_string(std::string_view key, std::string_view v) { set(key, GgufValue(v)); }
  /// Sets an ARRAY of a fixed-size type (T one of uint8_t..int64_t, float, double, bool); name T
  /// explicitly, e.g. `set_array<int32_t>("tokenizer.ggml.token_type", types)`.
  template <typename T>
  void set_array(std::string_view key, std::span<const T> values);
  /// Sets an ARRAY of STRING.
  void set_array_strings(std::string_view key, std::span<const std::string> values);
  /// Sets an ARRAY of STRING from views.
  void set_array_strings(std::string_view key, std::span<const std::string_view> values);
  /// Sets `general.alignment` (a power of two; default 32).
  void set_alignment(uint32_t alignment) { set_u32("general.alignment", alignment); }
  /// True if the key has been set.
  bool has(std::string_view key) const { return kv_index_.contains(std::string(key)); }

  /// Adds a tensor, taking ownership of its bytes. dims are ne, innermost first (1 to 4, > 0);
  /// the byte count must match the type table exactly.
  void add_tensor(std::string name, std::vector<uint64_t> dims, GgmlType type,
                  std::vector<uint8_t> data);
  /// Adds a tensor whose bytes are borrowed: they must stay alive until the last write.
  void add_tensor_ref(std::string name, std::vector<uint64_t> dims, GgmlType type,
                      std::span<const uint8_t> data);

  /// Alignment in effect (`general.alignment` or 32).
  uint32_t alignment() const { return alignment_; }
  /// Number of tensors added.
  size_t tensor_count() const { return tensors_.size(); }
  /// True if a tensor of that name has been added.
  bool has_tensor(std::string_view name) const;

  /// The whole file image.
  std::vector<uint8_t> to_bytes() const;
  /// Writes the file; an Error names the path on an I/O failure.
  void write(const std::string& path) const;
  /// Writes `<prefix>-00001-of-0000N.gguf` ... with `split.*` keys in every shard; all other
  /// metadata goes into the first shard. Returns the paths written, in order.
  std::vector<std::string> write_split(const std::string& prefix, GgufSplitLimits limits) const;

 private:
  struct Kv {
    std::string key;
    std::vector<uint8_t> encoded;  // type tag + value
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    GgmlType type;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> data;
  };
  class Sink;

  void set_encoded(std::string_view key, std::vector<uint8_t> encoded);
  void add_checked(Tensor t);
  void emit(Sink& sink, std::span<const Kv* const> kv,
            std::span<const Tensor* const> tensors) const;
  std::vector<const Kv*> all_kv() const;

  uint32_t alignment_ = 32;
  std::vector<Kv> kv_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::vector<Tensor> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace ugrad::llm
