#include "llm/gguf/value.h"

#include <fmt/format.h>

#include "base/error.h"

namespace ugrad::llm {
namespace {

struct TypeRow {
  std::string_view name;
  uint32_t size;
};

constexpr TypeRow kTypes[kGgufTypeCount] = {
#define UGRAD_GGUF_TYPE_ROW(name, tag, spec_name, size) {#spec_name, size},
    UGRAD_FOR_EACH_GGUF_TYPE(UGRAD_GGUF_TYPE_ROW)
#undef UGRAD_GGUF_TYPE_ROW
};

constexpr size_t kDisplayElements = 8;

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  auto i = static_cast<uint32_t>(t);
  return i < kGgufTypeCount ? kTypes[i].name : std::string_view("?");
}

uint32_t gguf_type_size(GgufType t) {
  auto i = static_cast<uint32_t>(t);
  return i < kGgufTypeCount ? kTypes[i].size : 0;
}

bool gguf_type_is_integer(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::U16:
    case GgufType::I16:
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::U64:
    case GgufType::I64:
      return true;
    default:
      return false;
  }
}

int64_t GgufArray::int_at(uint64_t i) const {
  UGRAD_ASSERT(i < count);
  const uint8_t* p = raw.data() + i * gguf_type_size(elem_type);
  switch (elem_type) {
    case GgufType::U8:
      return gguf_load_le<uint8_t>(p);
    case GgufType::I8:
      return gguf_load_le<int8_t>(p);
    case GgufType::U16:
      return gguf_load_le<uint16_t>(p);
    case GgufType::I16:
      return gguf_load_le<int16_t>(p);
    case GgufType::U32:
      return gguf_load_le<uint32_t>(p);
    case GgufType::I32:
      return gguf_load_le<int32_t>(p);
    case GgufType::I64:
      return gguf_load_le<int64_t>(p);
    case GgufType::U64: {
      uint64_t v = gguf_load_le<uint64_t>(p);
      if (v > static_cast<uint64_t>(INT64_MAX))
        fail("gguf: array element {} is {}, which does not fit in int64", i, v);
      return static_cast<int64_t>(v);
    }
    default:
      fail("gguf: array of {} read as integers", gguf_type_name(elem_type));
  }
}

double GgufArray::float_at(uint64_t i) const {
  UGRAD_ASSERT(i < count);
  const uint8_t* p = raw.data() + i * gguf_type_size(elem_type);
  if (elem_type == GgufType::F32) return gguf_load_le<float>(p);
  if (elem_type == GgufType::F64) return gguf_load_le<double>(p);
  fail("gguf: array of {} read as floats", gguf_type_name(elem_type));
}

bool GgufArray::bool_at(uint64_t i) const {
  UGRAD_ASSERT(i < count);
  if (elem_type != GgufType::BOOL)
    fail("gguf: array of {} read as bools", gguf_type_name(elem_type));
  return raw[i] != 0;
}

std::string GgufValue::to_display_string() const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          return fmt::format("\"{}\"", v);
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          std::string out = fmt::format("{}[{}] [", gguf_type_name(v.elem_type), v.count);
          size_t shown = v.count < kDisplayElements ? v.count : kDisplayElements;
          for (size_t i = 0; i < shown; ++i) {
            if (i) out += ", ";
            if (v.elem_type == GgufType::STRING)
              out += fmt::format("\"{}\"", v.strings[i]);
            else if (v.elem_type == GgufType::ARRAY)
              out += v.arrays[i].to_display_string();
            else if (v.elem_type == GgufType::F32 || v.elem_type == GgufType::F64)
              out += fmt::format("{}", v.float_at(i));
            else if (v.elem_type == GgufType::BOOL)
              out += v.bool_at(i) ? "true" : "false";
            else if (v.elem_type == GgufType::U64)
              out += fmt::format("{}", gguf_load_le<uint64_t>(v.raw.data() + i * 8));
            else
              out += fmt::format("{}", v.int_at(i));
          }
          if (shown < v.count) out += ", ...";
          return out + "]";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          return fmt::format("{}", static_cast<int>(v));
        } else {
          return fmt::format("{}", v);
        }
      },
      v_);
}

}  // namespace ugrad::llm
