// GgufFile's metadata lookups and typed getters.
#include <utility>

#include "base/error.h"
#include "base/quote.h"
#include "llm/gguf/gguf.h"

namespace ugrad::llm {
namespace {

template <typename T>
constexpr std::string_view cpp_name() {
  if constexpr (std::is_same_v<T, uint32_t>)
    return "uint32";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "int32";
  else if constexpr (std::is_same_v<T, uint64_t>)
    return "uint64";
  else
    return "int64";
}

[[noreturn]] void type_mismatch(std::string_view key, const GgufValue& v, std::string_view want) {
  fail("gguf: metadata key {} has type {}, expected {}", quote(key), gguf_type_name(v.type()),
       want);
}

// An integer value of any GGUF integer type, range-checked into T.
template <typename T>
T int_value(std::string_view key, const GgufValue& v) {
  return std::visit(
      [&](const auto& x) -> T {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
          if (!std::in_range<T>(x))
            fail("gguf: metadata key {} is {} {}, which does not fit in {}", quote(key),
                 gguf_type_name(v.type()), x, cpp_name<T>());
          return static_cast<T>(x);
        } else {
          type_mismatch(key, v, "an integer");
        }
      },
      v.storage());
}

template <typename T, typename X>
T checked_element(std::string_view key, const GgufArray& a, uint64_t i, X x) {
  if (!std::in_range<T>(x))
    fail("gguf: metadata key {}: {} array element {} is {}, which does not fit in {}", quote(key),
         gguf_type_name(a.elem_type), i, x, cpp_name<T>());
  return static_cast<T>(x);
}

// Converts `a.count` little-endian X elements into T, each range-checked.
template <typename T, typename X>
std::vector<T> convert_elements(std::string_view key, const GgufArray& a) {
  std::vector<T> out(a.count);
  const uint8_t* p = a.raw.data();
  for (uint64_t i = 0; i < a.count; ++i)
    out[i] = checked_element<T>(key, a, i, gguf_load_le<X>(p + i * sizeof(X)));
  return out;
}

// The elements of an integer array, each range-checked into T (one switch, then a typed loop:
// token-type arrays hold ~150k elements).
template <typename T>
std::vector<T> int_array(std::string_view key, const GgufValue& v) {
  if (v.type() != GgufType::ARRAY) type_mismatch(key, v, "an integer ARRAY");
  const GgufArray& a = v.as<GgufArray>();
  switch (a.elem_type) {
    case GgufType::U8:
      return convert_elements<T, uint8_t>(key, a);
    case GgufType::I8:
      return convert_elements<T, int8_t>(key, a);
    case GgufType::U16:
      return convert_elements<T, uint16_t>(key, a);
    case GgufType::I16:
      return convert_elements<T, int16_t>(key, a);
    case GgufType::U32:
      return convert_elements<T, uint32_t>(key, a);
    case GgufType::I32:
      return convert_elements<T, int32_t>(key, a);
    case GgufType::U64:
      return convert_elements<T, uint64_t>(key, a);
    case GgufType::I64:
      return convert_elements<T, int64_t>(key, a);
    default:
      fail("gguf: metadata key {} is an ARRAY of {}, expected an integer ARRAY", quote(key),
           gguf_type_name(a.elem_type));
  }
}

}  // namespace

bool GgufFile::has(std::string_view key) const { return kv_index_.contains(key); }

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].value;
}

const GgufValue& GgufFile::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) fail("gguf: metadata key {} is missing", quote(key));
  return *v;
}

uint32_t GgufFile::get_u32(std::string_view key) const {
  return int_value<uint32_t>(key, get(key));
}
uint64_t GgufFile::get_u64(std::string_view key) const {
  return int_value<uint64_t>(key, get(key));
}
int32_t GgufFile::get_i32(std::string_view key) const { return int_value<int32_t>(key, get(key)); }
int64_t GgufFile::get_i64(std::string_view key) const { return int_value<int64_t>(key, get(key)); }

float GgufFile::get_f32(std::string_view key) const { return static_cast<float>(get_f64(key)); }

double GgufFile::get_f64(std::string_view key) const {
  const GgufValue& v = get(key);
  if (v.type() == GgufType::F32) return v.as<float>();
  if (v.type() == GgufType::F64) return v.as<double>();
  type_mismatch(key, v, "FLOAT32 or FLOAT64");
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = get(key);
  if (v.type() != GgufType::BOOL) type_mismatch(key, v, "BOOL");
  return v.as<bool>();
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = get(key);
  if (v.type() != GgufType::STRING) type_mismatch(key, v, "STRING");
  return v.as<std::string_view>();
}

const GgufArray& GgufFile::get_array(std::string_view key) const {
  const GgufValue& v = get(key);
  if (v.type() != GgufType::ARRAY) type_mismatch(key, v, "ARRAY");
  return v.as<GgufArray>();
}

std::span<const std::string_view> GgufFile::get_array_strings(std::string_view key) const {
  const GgufArray& a = get_array(key);
  if (a.elem_type != GgufType::STRING)
    fail("gguf: metadata key {} is an ARRAY of {}, expected an ARRAY of STRING", quote(key),
         gguf_type_name(a.elem_type));
  return a.strings;
}

std::vector<int32_t> GgufFile::get_array_i32(std::string_view key) const {
  return int_array<int32_t>(key, get(key));
}
std::vector<uint32_t> GgufFile::get_array_u32(std::string_view key) const {
  return int_array<uint32_t>(key, get(key));
}
std::vector<int64_t> GgufFile::get_array_i64(std::string_view key) const {
  return int_array<int64_t>(key, get(key));
}

std::vector<float> GgufFile::get_array_f32(std::string_view key) const {
  const GgufArray& a = get_array(key);
  if (a.elem_type != GgufType::F32 && a.elem_type != GgufType::F64)
    fail("gguf: metadata key {} is an ARRAY of {}, expected an ARRAY of FLOAT32", quote(key),
         gguf_type_name(a.elem_type));
  std::vector<float> out(a.count);
  for (uint64_t i = 0; i < a.count; ++i) out[i] = static_cast<float>(a.float_at(i));
  return out;
}

uint32_t GgufFile::get_u32_or(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : fallback;
}

float GgufFile::get_f32_or(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : fallback;
}

}  // namespace ugrad::llm
