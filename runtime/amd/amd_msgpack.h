// A small MessagePack reader for the AMDGPU metadata note (NT_AMDGPU_METADATA): the whole document
// becomes a tree of MsgPackValue. Bounds-checked, depth-limited; bad input is an Error.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ugrad {

struct MsgPackEntry;

struct MsgPackValue {
  enum class Kind { Nil, Bool, Int, Float, Str, Bin, Array, Map };
  Kind kind = Kind::Nil;
  bool boolean = false;
  bool is_unsigned = false;  // Int: value came from a uint encoding (bits in uint_value)
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  double float_value = 0;
  std::string str;  // Str and Bin
  std::vector<MsgPackValue> array;
  std::vector<MsgPackEntry> map;  // a struct, not std::pair: pair needs complete types

  /// Map lookup by string key; nullptr if absent or not a map.
  const MsgPackValue* find(std::string_view key) const;
  /// Int as uint64; Error naming `what` if not a non-negative integer.
  uint64_t as_uint(std::string_view what) const;
  /// Str; Error naming `what` otherwise.
  const std::string& as_str(std::string_view what) const;
};

/// One key/value pair of a map, in file order.
struct MsgPackEntry {
  MsgPackValue key;
  MsgPackValue value;
};

/// Parses exactly one MessagePack document covering all of `bytes`; `what` names it in errors.
MsgPackValue parse_msgpack(std::span<const uint8_t> bytes, std::string_view what);

}  // namespace ugrad
