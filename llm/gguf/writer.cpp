#include "llm/gguf/writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>

#include "base/error.h"
#include "base/quote.h"
#include "llm/gguf/split.h"

namespace ugrad::llm {
namespace {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kMagic = 0x46554747;  // "GGUF"
constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr size_t kFileBuffer = 1 << 20;

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Appends raw bytes (resize + memcpy: GCC 12's -Wstringop-overflow misfires on vector::insert).
void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  if (n == 0) return;
  size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, p, n);
}

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  put_bytes(out, &v, sizeof(T));  // little-endian host (checked in value.h)
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

void encode_array_body(std::vector<uint8_t>& out, std::string_view key, const GgufArray& a);

// Encodes a value without its type tag.
void encode_body(std::vector<uint8_t>& out, std::string_view key, const GgufValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string_view>)
          put_string(out, x);
        else if constexpr (std::is_same_v<T, GgufArray>)
          encode_array_body(out, key, x);
        else if constexpr (std::is_same_v<T, bool>)
          put<uint8_t>(out, x ? 1 : 0);
        else
          put<T>(out, x);
      },
      v.storage());
}

void encode_array_body(std::vector<uint8_t>& out, std::string_view key, const GgufArray& a) {
  if (static_cast<uint32_t>(a.elem_type) >= kGgufTypeCount)
    fail("gguf writer: key {}: array element type {} is not a GGUF type", quote(key),
         static_cast<uint32_t>(a.elem_type));
  put<uint32_t>(out, static_cast<uint32_t>(a.elem_type));
  put<uint64_t>(out, a.count);
  if (a.elem_type == GgufType::STRING) {
    if (a.strings.size() != a.count)
      fail("gguf writer: key {}: array says {} strings but holds {}", quote(key), a.count,
           a.strings.size());
    for (std::string_view s : a.strings) put_string(out, s);
  } else if (a.elem_type == GgufType::ARRAY) {
    if (a.arrays.size() != a.count)
      fail("gguf writer: key {}: array says {} arrays but holds {}", quote(key), a.count,
           a.arrays.size());
    for (const GgufValue& e : a.arrays) {
      if (e.type() != GgufType::ARRAY)
        fail("gguf writer: key {}: element of an ARRAY of ARRAY has type {}", quote(key),
             gguf_type_name(e.type()));
      encode_array_body(out, key, e.as<GgufArray>());
    }
  } else {
    uint64_t size = gguf_type_size(a.elem_type);
    if (a.raw.size() / size != a.count || a.raw.size() % size != 0)
      fail("gguf writer: key {}: array says {} {} elements but holds {} bytes", quote(key), a.count,
           gguf_type_name(a.elem_type), a.raw.size());
    if (a.elem_type == GgufType::BOOL)
      for (uint8_t b : a.raw)
        if (b > 1) fail("gguf writer: key {}: BOOL array element is {}, not 0 or 1", quote(key), b);
    put_bytes(out, a.raw.data(), a.raw.size());
  }
}

template <typename T>
constexpr GgufType gguf_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return GgufType::BOOL;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return GgufType::U8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufType::I8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufType::U16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufType::I16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufType::U32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufType::I32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufType::U64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufType::I64;
  else if constexpr (std::is_same_v<T, float>)
    return GgufType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return GgufType::F64;
}

std::string dims_string(std::span<const uint64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Creates `path` and lets `body` write it through a large buffer; I/O errors name the path.
void write_file(const std::string& path, const std::function<void(std::FILE*)>& body) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("gguf writer: cannot create {}: {}", quote(path), std::strerror(errno));
  std::unique_ptr<std::FILE, FileCloser> guard(f);
  std::vector<char> buffer(kFileBuffer);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  body(f);
  if (std::fflush(f) != 0)
    fail("gguf writer: cannot write {}: {}", quote(path), std::strerror(errno));
  guard.release();
  if (std::fclose(f) != 0)
    fail("gguf writer: cannot close {}: {}", quote(path), std::strerror(errno));
}

}  // namespace

// Receives the file image: appended to a buffer or streamed to a FILE.
class GgufWriter::Sink {
 public:
  explicit Sink(std::vector<uint8_t>* buffer) : buffer_(buffer) {}
  Sink(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}

  void write(const uint8_t* p, size_t n) {
    if (buffer_) {
      put_bytes(*buffer_, p, n);
    } else if (n > 0 && std::fwrite(p, 1, n, file_) != n) {
      fail("gguf writer: cannot write {}: {}", quote(path_), std::strerror(errno));
    }
    written_ += n;
  }
  void write(std::span<const uint8_t> s) { write(s.data(), s.size()); }
  void pad_to(uint64_t alignment) {
    static constexpr uint8_t kZeros[256] = {};
    uint64_t n = align_up(written_, alignment) - written_;
    while (n > 0) {
      uint64_t k = std::min<uint64_t>(n, sizeof(kZeros));
      write(kZeros, k);
      n -= k;
    }
  }
  uint64_t written() const { return written_; }

 private:
  std::vector<uint8_t>* buffer_ = nullptr;
  std::FILE* file_ = nullptr;
  std::string path_;
  uint64_t written_ = 0;
};

void GgufWriter::set(std::string_view key, const GgufValue& value) {
  std::vector<uint8_t> enc;
  put<uint32_t>(enc, static_cast<uint32_t>(value.type()));
  encode_body(enc, key, value);
  if (key == kAlignmentKey) {
    if (value.type() != GgufType::U32)
      fail("gguf writer: {} must be UINT32, not {}", quote(key), gguf_type_name(value.type()));
    uint32_t a = value.as<uint32_t>();
    if (a == 0 || (a & (a - 1)) != 0)
      fail("gguf writer: {} is {}, which is not a power of two", quote(key), a);
    alignment_ = a;
  }
  set_encoded(key, std::move(enc));
}

void GgufWriter::set_encoded(std::string_view key, std::vector<uint8_t> encoded) {
  auto [it, inserted] = kv_index_.emplace(std::string(key), kv_.size());
  if (inserted)
    kv_.push_back(Kv{std::string(key), std::move(encoded)});
  else
    kv_[it->second].encoded = std::move(encoded);
}

template <typename T>
void GgufWriter::set_array(std::string_view key, std::span<const T> values) {
  static_assert(sizeof(bool) == 1, "BOOL arrays are stored one byte per element");
  GgufArray a;
  a.elem_type = gguf_type_of<T>();
  a.count = values.size();
  a.raw = {reinterpret_cast<const uint8_t*>(values.data()), values.size_bytes()};
  set(key, GgufValue(std::move(a)));
}

#define UGRAD_GGUF_SET_ARRAY(T) \
  template void GgufWriter::set_array<T>(std::string_view, std::span<const T>);
UGRAD_GGUF_SET_ARRAY(uint8_t)
UGRAD_GGUF_SET_ARRAY(int8_t)
UGRAD_GGUF_SET_ARRAY(uint16_t)
UGRAD_GGUF_SET_ARRAY(int16_t)
UGRAD_GGUF_SET_ARRAY(uint32_t)
UGRAD_GGUF_SET_ARRAY(int32_t)
UGRAD_GGUF_SET_ARRAY(uint64_t)
UGRAD_GGUF_SET_ARRAY(int64_t)
UGRAD_GGUF_SET_ARRAY(float)
UGRAD_GGUF_SET_ARRAY(double)
UGRAD_GGUF_SET_ARRAY(bool)
#undef UGRAD_GGUF_SET_ARRAY

void GgufWriter::set_array_strings(std::string_view key, std::span<const std::string> values) {
  std::vector<std::string_view> views(values.begin(), values.end());
  set_array_strings(key, views);
}

void GgufWriter::set_array_strings(std::string_view key, std::span<const std::string_view> values) {
  GgufArray a;
  a.elem_type = GgufType::STRING;
  a.count = values.size();
  a.strings.assign(values.begin(), values.end());
  set(key, GgufValue(std::move(a)));
}

void GgufWriter::add_tensor(std::string name, std::vector<uint64_t> dims, GgmlType type,
                            std::vector<uint8_t> data) {
  add_checked(Tensor{std::move(name), std::move(dims), type, std::move(data), {}});
}

void GgufWriter::add_tensor_ref(std::string name, std::vector<uint64_t> dims, GgmlType type,
                                std::span<const uint8_t> data) {
  add_checked(Tensor{std::move(name), std::move(dims), type, {}, data});
}

bool GgufWriter::has_tensor(std::string_view name) const {
  return std::any_of(tensors_.begin(), tensors_.end(),
                     [&](const Tensor& t) { return t.name == name; });
}

void GgufWriter::add_checked(Tensor t) {
  if (t.name.size() > kGgufMaxTensorName)
    fail("gguf writer: tensor name {} is {} bytes, longer than ggml's {}", quote(t.name),
         t.name.size(), kGgufMaxTensorName);
  if (tensor_index_.contains(t.name)) fail("gguf writer: duplicate tensor name {}", quote(t.name));
  if (t.dims.empty() || t.dims.size() > 4)
    fail("gguf writer: tensor {} has {} dimensions, expected 1 to 4", quote(t.name), t.dims.size());
  const QuantFormat& f = format_of(t.type);
  uint64_t n = 1;
  for (uint64_t d : t.dims)
    if (d == 0 || d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(n, d, &n))
      fail("gguf writer: tensor {} has invalid dims {}", quote(t.name), dims_string(t.dims));
  if (t.dims[0] % f.block_size != 0)
    fail("gguf writer: tensor {} has row length {}, not a multiple of {}'s block size {}",
         quote(t.name), t.dims[0], f.name, f.block_size);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(n / f.block_size, f.block_bytes, &nbytes))
    fail("gguf writer: tensor {} of {} {} is too large", quote(t.name), f.name,
         dims_string(t.dims));
  if (!t.owned.empty() || t.data.empty()) t.data = t.owned;
  if (t.data.size() != nbytes)
    fail("gguf writer: tensor {} ({} {}) needs {} bytes but was given {}", quote(t.name), f.name,
         dims_string(t.dims), nbytes, t.data.size());
  tensor_index_.emplace(t.name, tensors_.size());
  tensors_.push_back(std::move(t));  // moving `owned` keeps its buffer, so `data` stays valid
}

std::vector<const GgufWriter::Kv*> GgufWriter::all_kv() const {
  std::vector<const Kv*> kv;
  for (const Kv& k : kv_) kv.push_back(&k);
  return kv;
}

void GgufWriter::emit(Sink& sink, std::span<const Kv* const> kv,
                      std::span<const Tensor* const> tensors) const {
  std::vector<uint8_t> head;
  put<uint32_t>(head, kMagic);
  put<uint32_t>(head, kVersion);
  put<uint64_t>(head, tensors.size());
  put<uint64_t>(head, kv.size());
  for (const Kv* k : kv) {
    put_string(head, k->key);
    put_bytes(head, k->encoded.data(), k->encoded.size());
  }
  uint64_t offset = 0;  // aligned running sum, in record order (what ggml requires)
  for (const Tensor* t : tensors) {
    put_string(head, t->name);
    put<uint32_t>(head, static_cast<uint32_t>(t->dims.size()));
    for (uint64_t d : t->dims) put<uint64_t>(head, d);
    put<uint32_t>(head, static_cast<uint32_t>(t->type));
    put<uint64_t>(head, offset);
    offset += align_up(t->data.size(), alignment_);
  }
  sink.write(head);
  if (tensors.empty()) return;  // ggml pads to the data section only when there are tensors
  sink.pad_to(alignment_);
  uint64_t data_start = sink.written();
  for (const Tensor* t : tensors) {
    sink.write(t->data);
    sink.pad_to(alignment_);
  }
  UGRAD_ASSERT(sink.written() == data_start + offset);
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  Sink sink(&out);
  std::vector<const Tensor*> tensors;
  for (const Tensor& t : tensors_) tensors.push_back(&t);
  emit(sink, all_kv(), tensors);
  return out;
}

void GgufWriter::write(const std::string& path) const {
  std::vector<const Tensor*> tensors;
  for (const Tensor& t : tensors_) tensors.push_back(&t);
  auto kv = all_kv();
  write_file(path, [&](std::FILE* f) {
    Sink sink(f, path);
    emit(sink, kv, tensors);
  });
}

std::vector<std::string> GgufWriter::write_split(const std::string& prefix,
                                                 GgufSplitLimits limits) const {
  // Cut the tensor list into shards, in order.
  std::vector<std::vector<const Tensor*>> shards(1);
  uint64_t shard_bytes = 0;
  for (const Tensor& t : tensors_) {
    bool full = !shards.back().empty() &&
                ((limits.max_tensors && shards.back().size() >= limits.max_tensors) ||
                 (limits.max_bytes && shard_bytes + t.data.size() > limits.max_bytes));
    if (full) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&t);
    shard_bytes += align_up(t.data.size(), alignment_);
  }
  if (shards.size() > kGgufMaxShards)
    fail("gguf writer: {} shards needed, more than {}", shards.size(), kGgufMaxShards);
  auto count = static_cast<uint16_t>(shards.size());
  std::vector<std::string> paths;
  for (uint16_t i = 0; i < count; ++i) {
    GgufWriter keys;  // encodes the split.* keys
    keys.set_scalar<uint16_t>(kGgufSplitNo, i);
    keys.set_scalar<uint16_t>(kGgufSplitCount, count);
    keys.set_scalar<int32_t>(kGgufSplitTensorsCount, static_cast<int32_t>(tensors_.size()));
    std::vector<const Kv*> kv;
    for (const Kv& k : kv_) {
      bool is_split_key = k.key.starts_with("split.");
      if (!is_split_key && (i == 0 || k.key == kAlignmentKey)) kv.push_back(&k);
    }
    for (const Kv& k : keys.kv_) kv.push_back(&k);
    std::string path = gguf_split_path(prefix, i, count);
    write_file(path, [&](std::FILE* f) {
      Sink sink(f, path);
      emit(sink, kv, shards[i]);
    });
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace ugrad::llm
