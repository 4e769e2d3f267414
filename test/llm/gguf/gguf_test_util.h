// Helpers for the GGUF tests and the fuzzer: a little-endian byte builder for hand-made files,
// a function that parses an image and touches every value, and scratch directories.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "llm/gguf/gguf.h"

namespace ugrad::llm::test {

/// Builds GGUF images field by field (little-endian), for inputs the writer refuses to make.
struct Bytes {
  std::vector<uint8_t> b;

  template <typename T>
  Bytes& put(T v) {
    size_t at = b.size();  // resize + memcpy: GCC 12 misreports vector::insert here
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    size_t at = b.size();
    b.resize(at + s.size());
    if (!s.empty()) std::memcpy(b.data() + at, s.data(), s.size());
    return *this;
  }
  /// Magic, version and the two counts.
  Bytes& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    return u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  }
  /// A key with a UINT32 value.
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  /// A key with a STRING value.
  Bytes& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  /// A tensor record.
  Bytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  /// Zero bytes up to a multiple of `a`.
  Bytes& align(uint64_t a) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

/// Calls every typed getter on `key`; each may fail with Error on a type or range mismatch.
inline uint64_t typed_getters(const GgufFile& f, std::string_view key) {
  uint64_t sum = 0;
  auto attempt = [&](auto&& get) {
    try {
      sum += static_cast<uint64_t>(get());
    } catch (const Error&) {
      sum += 1;
    }
  };
  attempt([&] { return f.get_u32(key); });
  attempt([&] { return f.get_i64(key); });
  attempt([&] { return f.get_u64(key); });
  attempt([&] { return f.get_f64(key) != 0; });
  attempt([&] { return f.get_bool(key); });
  attempt([&] { return f.get_string(key).size(); });
  attempt([&] { return f.get_array_strings(key).size(); });
  attempt([&] { return f.get_array_i32(key).size(); });
  attempt([&] { return f.get_array_u32(key).size(); });
  attempt([&] { return f.get_array_f32(key).size(); });
  return sum;
}

/// Parses `bytes` and reads every metadata value and every tensor byte. Returns a checksum (so
/// nothing is optimized away); an Error from bad input is caught and counted as 0.
inline uint64_t touch_gguf(std::span<const uint8_t> bytes) {
  uint64_t sum = 0;
  try {
    GgufFile f = GgufFile::from_bytes(bytes);
    sum += f.version() + f.alignment();
    for (const GgufKV& kv : f.metadata()) {
      sum += kv.key.size() + kv.value.to_display_string().size();
      if (kv.value.type() == GgufType::ARRAY) {
        const GgufArray& a = kv.value.as<GgufArray>();
        for (uint8_t x : a.raw) sum += x;
        for (std::string_view s : a.strings) sum += s.size();
      }
      sum += f.has(kv.key);
      sum += typed_getters(f, kv.key);
    }
    for (const GgufTensor& t : f.tensors()) {
      sum += t.n_elements() + t.offset + t.dims.size();
      for (uint8_t x : t.data) sum += x;
      sum += f.find_tensor(t.name) == &t;
    }
  } catch (const Error&) {
    return 0;
  }
  return sum;
}

/// A fresh scratch directory, removed (with its files) on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("ugrad_gguf_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  /// `name` inside the directory.
  std::string file(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace ugrad::llm::test
