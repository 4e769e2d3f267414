#include "runtime/amd/amd_msgpack.h"

#include <cstring>

#include "base/error.h"

namespace ugrad {

namespace {

constexpr int kMaxDepth = 32;

class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, std::string_view what) : bytes_(bytes), what_(what) {}

  MsgPackValue value(int depth) {
    if (depth > kMaxDepth) fail("msgpack: {}: nesting deeper than {}", what_, kMaxDepth);
    const size_t at = pos_;
    const uint8_t tag = u8();
    MsgPackValue v;
    if (tag <= 0x7f) return int_of(tag);                           // positive fixint
    if (tag >= 0xe0) return sint_of(static_cast<int8_t>(tag));     // negative fixint
    if ((tag & 0xf0) == 0x80) return map_of(tag & 0x0f, depth);    // fixmap
    if ((tag & 0xf0) == 0x90) return array_of(tag & 0x0f, depth);  // fixarray
    if ((tag & 0xe0) == 0xa0) return str_of(tag & 0x1f, MsgPackValue::Kind::Str);  // fixstr
    switch (tag) {
      case 0xc0:
        return v;
      case 0xc2:
        v.kind = MsgPackValue::Kind::Bool;
        v.boolean = false;
        return v;
      case 0xc3:
        v.kind = MsgPackValue::Kind::Bool;
        v.boolean = true;
        return v;
      case 0xc4:
        return str_of(u8(), MsgPackValue::Kind::Bin);
      case 0xc5:
        return str_of(be(2), MsgPackValue::Kind::Bin);
      case 0xc6:
        return str_of(be(4), MsgPackValue::Kind::Bin);
      case 0xca: {
        uint32_t bits = static_cast<uint32_t>(be(4));
        float f;
        std::memcpy(&f, &bits, 4);
        v.kind = MsgPackValue::Kind::Float;
        v.float_value = f;
        return v;
      }
      case 0xcb: {
        uint64_t bits = be(8);
        v.kind = MsgPackValue::Kind::Float;
        std::memcpy(&v.float_value, &bits, 8);
        return v;
      }
      case 0xcc:
        return int_of(u8());
      case 0xcd:
        return int_of(be(2));
      case 0xce:
        return int_of(be(4));
      case 0xcf:
        return int_of(be(8));
      case 0xd0:
        return sint_of(static_cast<int8_t>(u8()));
      case 0xd1:
        return sint_of(static_cast<int16_t>(be(2)));
      case 0xd2:
        return sint_of(static_cast<int32_t>(be(4)));
      case 0xd3:
        return sint_of(static_cast<int64_t>(be(8)));
      case 0xd9:
        return str_of(u8(), MsgPackValue::Kind::Str);
      case 0xda:
        return str_of(be(2), MsgPackValue::Kind::Str);
      case 0xdb:
        return str_of(be(4), MsgPackValue::Kind::Str);
      case 0xdc:
        return array_of(be(2), depth);
      case 0xdd:
        return array_of(be(4), depth);
      case 0xde:
        return map_of(be(2), depth);
      case 0xdf:
        return map_of(be(4), depth);
      default:
        fail("msgpack: {}: unsupported type tag 0x{:02x} at byte {}", what_, tag, at);
    }
  }

  size_t pos() const { return pos_; }

 private:
  void need(uint64_t n) {
    if (n > bytes_.size() - pos_)
      fail("msgpack: {}: truncated at byte {} (needs {} more of {})", what_, pos_, n,
           bytes_.size());
  }
  uint8_t u8() {
    need(1);
    return bytes_[pos_++];
  }
  uint64_t be(int n) {
    need(n);
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | bytes_[pos_++];
    return v;
  }
  static MsgPackValue int_of(uint64_t u) {
    MsgPackValue v;
    v.kind = MsgPackValue::Kind::Int;
    v.is_unsigned = true;
    v.uint_value = u;
    v.int_value = static_cast<int64_t>(u);
    return v;
  }
  static MsgPackValue sint_of(int64_t i) {
    MsgPackValue v;
    v.kind = MsgPackValue::Kind::Int;
    v.int_value = i;
    v.uint_value = static_cast<uint64_t>(i);
    return v;
  }
  MsgPackValue str_of(uint64_t n, MsgPackValue::Kind kind) {
    need(n);
    MsgPackValue v;
    v.kind = kind;
    v.str.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return v;
  }
  MsgPackValue array_of(uint64_t n, int depth) {
    need(n);  // every element takes at least one byte: bounds the reservation
    MsgPackValue v;
    v.kind = MsgPackValue::Kind::Array;
    v.array.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.array.push_back(value(depth + 1));
    return v;
  }
  MsgPackValue map_of(uint64_t n, int depth) {
    need(n);
    MsgPackValue v;
    v.kind = MsgPackValue::Kind::Map;
    v.map.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      MsgPackValue key = value(depth + 1);
      MsgPackValue val = value(depth + 1);
      v.map.push_back({std::move(key), std::move(val)});
    }
    return v;
  }

  std::span<const uint8_t> bytes_;
  std::string_view what_;
  size_t pos_ = 0;
};

}  // namespace

const MsgPackValue* MsgPackValue::find(std::string_view key) const {
  if (kind != Kind::Map) return nullptr;
  for (const auto& [k, v] : map)
    if (k.kind == Kind::Str && k.str == key) return &v;
  return nullptr;
}

uint64_t MsgPackValue::as_uint(std::string_view what) const {
  if (kind != Kind::Int || (!is_unsigned && int_value < 0))
    fail("msgpack: {} is not a non-negative integer", what);
  return uint_value;
}

const std::string& MsgPackValue::as_str(std::string_view what) const {
  if (kind != Kind::Str) fail("msgpack: {} is not a string", what);
  return str;
}

MsgPackValue parse_msgpack(std::span<const uint8_t> bytes, std::string_view what) {
  Reader reader(bytes, what);
  MsgPackValue v = reader.value(0);
  if (reader.pos() != bytes.size())
    fail("msgpack: {}: {} trailing bytes after the document", what, bytes.size() - reader.pos());
  return v;
}

}  // namespace ugrad
