// GGUF metadata values: the thirteen value types of the format (docs/gguf.md#metadata-value-types)
// and a value that can hold any of them, arrays (of scalars, strings or nested arrays) included.
// Values read from a file borrow their strings and array payloads from the file's mapping.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ugrad::llm {

// X(enumerator, GGUF tag, name in the spec, bytes per element; 0 = variable size)
#define UGRAD_FOR_EACH_GGUF_TYPE(X) \
  X(U8, 0, UINT8, 1)                \
  X(I8, 1, INT8, 1)                 \
  X(U16, 2, UINT16, 2)              \
  X(I16, 3, INT16, 2)               \
  X(U32, 4, UINT32, 4)              \
  X(I32, 5, INT32, 4)               \
  X(F32, 6, FLOAT32, 4)             \
  X(BOOL, 7, BOOL, 1)               \
  X(STRING, 8, STRING, 0)           \
  X(ARRAY, 9, ARRAY, 0)             \
  X(U64, 10, UINT64, 8)             \
  X(I64, 11, INT64, 8)              \
  X(F64, 12, FLOAT64, 8)

enum class GgufType : uint32_t {
#define UGRAD_GGUF_TYPE_ENUM(name, tag, spec_name, size) name = tag,
  UGRAD_FOR_EACH_GGUF_TYPE(UGRAD_GGUF_TYPE_ENUM)
#undef UGRAD_GGUF_TYPE_ENUM
};

/// Number of GGUF value types (tags are 0 .. kGgufTypeCount-1).
inline constexpr uint32_t kGgufTypeCount = 13;

/// The type's name as the spec writes it ("UINT32", "STRING", ...); "?" for an unknown tag.
std::string_view gguf_type_name(GgufType t);
/// Bytes one element of a fixed-size type takes in a file; 0 for STRING and ARRAY.
uint32_t gguf_type_size(GgufType t);
/// True for the integer types U8..I64 (not BOOL).
bool gguf_type_is_integer(GgufType t);

class GgufValue;

/// An array value. Fixed-size elements stay as little-endian bytes (`raw`, count * element size);
/// strings and nested arrays are decoded into `strings` / `arrays`.
struct GgufArray {
  GgufType elem_type = GgufType::U8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;
  std::vector<std::string_view> strings;
  std::vector<GgufValue> arrays;

  /// Element i of an integer array as int64 (U64 values above INT64_MAX are an Error).
  int64_t int_at(uint64_t i) const;
  /// Element i of an F32 or F64 array as double.
  double float_at(uint64_t i) const;
  /// Element i of a BOOL array.
  bool bool_at(uint64_t i) const;
};

/// One metadata value. The variant's index is the GGUF tag, so `type()` is free.
class GgufValue {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string_view, GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  /// Wraps a value; the C++ type picks the GGUF type (std::string_view is STRING).
  template <typename T>
  explicit GgufValue(T v) : v_(std::move(v)) {}

  /// The GGUF type of this value.
  GgufType type() const { return static_cast<GgufType>(v_.index()); }
  /// The stored value.
  const Storage& storage() const { return v_; }
  /// The value as T; T must be the stored alternative (check `type()` first).
  template <typename T>
  const T& as() const {
    return std::get<T>(v_);
  }
  /// A short human-readable rendering (arrays show their type, length and first elements).
  std::string to_display_string() const;

 private:
  Storage v_{uint8_t{0}};
};

/// Decodes one little-endian element of a fixed-size type at `p` (no alignment needed).
template <typename T>
T gguf_load_le(const uint8_t* p) {
  static_assert(std::endian::native == std::endian::little,
                "GGUF loading assumes a little-endian host");
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace ugrad::llm
