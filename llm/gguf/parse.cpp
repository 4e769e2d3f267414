#include "llm/gguf/parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {
namespace {

// Smallest encodings, used to bound counts by the bytes left before anything is allocated.
constexpr uint64_t kMinStringBytes = 8;              // u64 length, empty string
constexpr uint64_t kMinArrayBytes = 4 + 8;           // element type + count, empty array
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // empty key, type, 1-byte value
constexpr uint64_t kMinTensorBytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset
constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;
constexpr std::string_view kAlignmentKey = "general.alignment";

// Reads little-endian fields, checking each against the end of the image first.
class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, std::string_view source)
      : bytes_(bytes),
        prefix_(source.empty() ? "gguf: " : fmt::format("gguf: {}: ", quote(source))) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  uint64_t size() const { return bytes_.size(); }
  // What is being read, named in truncation errors (set per record, so it stays cheap).
  void set_context(std::string context) { context_ = std::move(context); }

  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> f, Args&&... args) const {
    throw Error(prefix_ + fmt::format(f, std::forward<Args>(args)...));
  }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      error("truncated file: {}{}{} needs {} bytes at byte {} but the file has {} bytes", context_,
            context_.empty() ? "" : ", ", what, n, pos_, bytes_.size());
  }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v = gguf_load_le<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }

  std::span<const uint8_t> take(uint64_t n, std::string_view what) {
    need(n, what);
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  // `count` strings back to back (count already bounded by the bytes left). A tight loop: the
  // vocabulary and merges arrays hold ~300k strings and dominate open time.
  void read_strings(uint64_t count, std::vector<std::string_view>& out) {
    out.resize(count);
    const uint8_t* p = bytes_.data() + pos_;
    const uint8_t* end = bytes_.data() + bytes_.size();
    for (uint64_t i = 0; i < count; ++i) {
      if (end - p < 8) {
        pos_ = p - bytes_.data();
        need(8, "array string");  // throws
      }
      uint64_t len = gguf_load_le<uint64_t>(p);
      p += 8;
      if (len > static_cast<uint64_t>(end - p)) {
        pos_ = p - bytes_.data();
        error("{}{}array string {} has length {} but only {} bytes remain at byte {}", context_,
              context_.empty() ? "" : ", ", i, len, end - p, pos_);
      }
      out[i] = {reinterpret_cast<const char*>(p), len};
      p += len;
    }
    pos_ = p - bytes_.data();
  }

  std::string_view read_string(std::string_view what) {
    auto len = read<uint64_t>(what);
    if (len > remaining())
      error("{}{}{} has length {} but only {} bytes remain at byte {}", context_,
            context_.empty() ? "" : ", ", what, len, remaining(), pos_);
    auto s = take(len, what);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  std::string prefix_;
  std::string context_;
};

GgufType read_type_tag(Reader& r, std::string_view key, std::string_view what) {
  auto tag = r.read<uint32_t>(what);
  if (tag >= kGgufTypeCount) r.error("metadata key {} has unknown {} {}", quote(key), what, tag);
  return static_cast<GgufType>(tag);
}

GgufValue read_value(Reader& r, GgufType type, std::string_view key, uint32_t depth);

GgufArray read_array(Reader& r, std::string_view key, uint32_t depth) {
  if (depth >= kGgufMaxArrayDepth)
    r.error("metadata key {} nests arrays deeper than {} levels", quote(key), kGgufMaxArrayDepth);
  GgufArray a;
  a.elem_type = read_type_tag(r, key, "array element type");
  a.count = r.read<uint64_t>("array length");
  uint64_t min_elem = a.elem_type == GgufType::STRING  ? kMinStringBytes
                      : a.elem_type == GgufType::ARRAY ? kMinArrayBytes
                                                       : gguf_type_size(a.elem_type);
  if (a.count > r.remaining() / min_elem)
    r.error(
        "metadata key {}: array of {} {} needs at least {} bytes per element but only {} "
        "bytes remain at byte {}",
        quote(key), a.count, gguf_type_name(a.elem_type), min_elem, r.remaining(), r.pos());
  if (a.elem_type == GgufType::STRING) {
    r.read_strings(a.count, a.strings);
  } else if (a.elem_type == GgufType::ARRAY) {
    a.arrays.reserve(a.count);
    for (uint64_t i = 0; i < a.count; ++i) a.arrays.emplace_back(read_array(r, key, depth + 1));
  } else {
    a.raw = r.take(a.count * min_elem, "array data");
    if (a.elem_type == GgufType::BOOL)
      for (uint64_t i = 0; i < a.count; ++i)
        if (a.raw[i] > 1)
          r.error("metadata key {}: BOOL array element {} is {}, not 0 or 1", quote(key), i,
                  a.raw[i]);
  }
  return a;
}

GgufValue read_value(Reader& r, GgufType type, std::string_view key, uint32_t depth) {
  switch (type) {
    case GgufType::U8:
      return GgufValue(r.read<uint8_t>("UINT8 value"));
    case GgufType::I8:
      return GgufValue(r.read<int8_t>("INT8 value"));
    case GgufType::U16:
      return GgufValue(r.read<uint16_t>("UINT16 value"));
    case GgufType::I16:
      return GgufValue(r.read<int16_t>("INT16 value"));
    case GgufType::U32:
      return GgufValue(r.read<uint32_t>("UINT32 value"));
    case GgufType::I32:
      return GgufValue(r.read<int32_t>("INT32 value"));
    case GgufType::F32:
      return GgufValue(r.read<float>("FLOAT32 value"));
    case GgufType::U64:
      return GgufValue(r.read<uint64_t>("UINT64 value"));
    case GgufType::I64:
      return GgufValue(r.read<int64_t>("INT64 value"));
    case GgufType::F64:
      return GgufValue(r.read<double>("FLOAT64 value"));
    case GgufType::BOOL: {
      auto b = r.read<uint8_t>("BOOL value");
      if (b > 1) r.error("metadata key {}: BOOL value is {}, not 0 or 1", quote(key), b);
      return GgufValue(b == 1);
    }
    case GgufType::STRING:
      return GgufValue(r.read_string("string value"));
    case GgufType::ARRAY:
      return GgufValue(read_array(r, key, depth));
  }
  internal_error("read_value: unhandled GGUF type {}", static_cast<uint32_t>(type));
}

uint32_t read_header(Reader& r) {
  if (r.size() < kHeaderBytes)
    r.error("truncated file: {} bytes, smaller than the {}-byte GGUF header", r.size(),
            kHeaderBytes);
  auto magic = r.read<uint32_t>("magic");
  if (magic != kGgufMagic)
    r.error("bad magic 0x{:08x}, expected 0x{:08x} (\"GGUF\"): not a GGUF file", magic, kGgufMagic);
  auto version = r.read<uint32_t>("version");
  if (version == 1) r.error("GGUF version 1 is not supported (only versions 2 and 3)");
  if (version != 2 && version != 3) {
    bool swapped = (version & 0xffff) == 0 && version != 0;
    r.error("unsupported GGUF version {}{} (only versions 2 and 3)", version,
            swapped ? ", a big-endian file?" : "");
  }
  return version;
}

void read_metadata(Reader& r, GgufFile::Shard& out) {
  auto n_kv = r.read<uint64_t>("metadata count");
  // The tensor count sits before n_kv; it is checked by the caller.
  if (n_kv > r.remaining() / kMinKvBytes)
    r.error("header claims {} metadata entries but only {} bytes remain after the header", n_kv,
            r.remaining());
  out.kv.reserve(n_kv);
  std::unordered_set<std::string_view> seen;
  for (uint64_t i = 0; i < n_kv; ++i) {
    r.set_context(fmt::format("metadata entry {}", i));
    std::string_view key = r.read_string("key");
    r.set_context(fmt::format("metadata key {}", quote(key)));
    if (!seen.insert(key).second) r.error("duplicate metadata key {}", quote(key));
    GgufType type = read_type_tag(r, key, "value type");
    out.kv.push_back(GgufKV{key, read_value(r, type, key, 0)});
  }
  r.set_context("");
  for (const GgufKV& kv : out.kv) {
    if (kv.key != kAlignmentKey) continue;
    if (kv.value.type() != GgufType::U32)
      r.error("{} has type {}, expected UINT32", quote(kAlignmentKey),
              gguf_type_name(kv.value.type()));
    uint32_t a = kv.value.as<uint32_t>();
    if (a == 0 || (a & (a - 1)) != 0)
      r.error("{} is {}, which is not a power of two", quote(kAlignmentKey), a);
    out.alignment = a;
  }
}

std::string dims_string(std::span<const uint64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Reads one tensor record and checks everything that does not depend on the data section.
GgufTensor read_tensor_info(Reader& r, uint64_t index, uint32_t alignment) {
  r.set_context(fmt::format("tensor record {}", index));
  GgufTensor t;
  t.name = r.read_string("name");
  r.set_context(fmt::format("tensor {}", quote(t.name)));
  auto n_dims = r.read<uint32_t>("dimension count");
  if (n_dims > kGgufMaxDims)
    r.error("tensor {} has {} dimensions, more than the {} ggml allows", quote(t.name), n_dims,
            kGgufMaxDims);
  t.dims.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) t.dims[d] = r.read<uint64_t>("dimension");
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    if (t.dims[d] == 0)
      r.error("tensor {} has dimension {} = 0 in {}", quote(t.name), d, dims_string(t.dims));
    if (t.dims[d] > static_cast<uint64_t>(INT64_MAX))
      r.error("tensor {} has negative dimension {} = {} (as int64) in {}", quote(t.name), d,
              static_cast<int64_t>(t.dims[d]), dims_string(t.dims));
    if (__builtin_mul_overflow(n_elements, t.dims[d], &n_elements))
      r.error("tensor {}: the element count of dims {} overflows 64 bits", quote(t.name),
              dims_string(t.dims));
  }
  auto type_id = r.read<uint32_t>("type");
  auto format = find_format(type_id);
  if (!format) r.error("tensor {} has unknown ggml type id {}", quote(t.name), type_id);
  t.type = format->type;
  uint64_t row = n_dims > 0 ? t.dims[0] : 1;
  if (row % format->block_size != 0)
    r.error("tensor {} has row length ne[0] = {}, not a multiple of {}'s block size {}",
            quote(t.name), row, format->name, format->block_size);
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(n_elements / format->block_size, format->block_bytes, &nbytes))
    r.error("tensor {}: the byte size of {} {} overflows 64 bits", quote(t.name), format->name,
            dims_string(t.dims));
  t.nbytes = nbytes;
  t.offset = r.read<uint64_t>("offset");
  if (t.offset % alignment != 0)
    r.error("tensor {} has offset {}, not a multiple of the alignment {}", quote(t.name), t.offset,
            alignment);
  return t;
}

// Data placement: every tensor inside the file, no two overlapping.
void check_data_section(Reader& r, GgufFile::Shard& out) {
  uint64_t size = out.bytes.size();
  for (GgufTensor& t : out.tensors) {
    // 128-bit sum: offset and nbytes are each below 2^64 but their sum need not be.
    unsigned __int128 end = static_cast<unsigned __int128>(out.data_start) + t.offset + t.nbytes;
    if (end > size) {
      if (end > UINT64_MAX)
        r.error("tensor {} with offset {} and {} bytes ends beyond 2^64; the file has {} bytes",
                quote(t.name), t.offset, t.nbytes, size);
      r.error("tensor {} ends at byte {} but the file has {}", quote(t.name),
              static_cast<uint64_t>(end), size);
    }
    t.file_offset = out.data_start + t.offset;
    t.data = out.bytes.subspan(t.file_offset, t.nbytes);
  }
  std::vector<const GgufTensor*> by_offset;
  by_offset.reserve(out.tensors.size());
  for (const GgufTensor& t : out.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensor& a = *by_offset[i - 1];
    const GgufTensor& b = *by_offset[i];
    if (a.offset + a.nbytes > b.offset)
      r.error("tensors {} (data bytes {}..{}) and {} (from {}) overlap", quote(a.name), a.offset,
              a.offset + a.nbytes, quote(b.name), b.offset);
  }
}

}  // namespace

const GgufValue* GgufFile::Shard::find(std::string_view key) const {
  for (const GgufKV& kv : kv)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

GgufFile::Shard parse_gguf(std::span<const uint8_t> bytes, std::string_view source) {
  GgufFile::Shard out;
  out.bytes = bytes;
  Reader r(bytes, source);
  out.version = read_header(r);
  auto n_tensors = r.read<uint64_t>("tensor count");
  if (n_tensors > (r.remaining() - 8) / kMinTensorBytes)
    r.error("header claims {} tensors but only {} bytes remain after the header", n_tensors,
            r.remaining() - 8);
  read_metadata(r, out);
  out.tensors.reserve(n_tensors);
  std::unordered_set<std::string_view> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    out.tensors.push_back(read_tensor_info(r, i, out.alignment));
    if (!names.insert(out.tensors.back().name).second)
      r.error("duplicate tensor name {}", quote(out.tensors.back().name));
  }
  r.set_context("");
  // Data starts at the next multiple of the alignment (ggml pads only when there are tensors).
  uint64_t end_of_info = r.pos();
  out.data_start = (end_of_info + out.alignment - 1) / out.alignment * out.alignment;
  if (n_tensors > 0 && out.data_start > bytes.size())
    r.error("truncated file: the data section starts at byte {} but the file has {}",
            out.data_start, bytes.size());
  check_data_section(r, out);
  return out;
}

}  // namespace ugrad::llm
