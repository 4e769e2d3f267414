#include "llm/gguf/gguf.h"

#include <filesystem>

#include "base/error.h"
#include "base/quote.h"
#include "llm/gguf/mapped_file.h"
#include "llm/gguf/parse.h"
#include "llm/gguf/split.h"

namespace ugrad::llm {
namespace {

GgufFile::Shard parse_mapped(const std::string& path, FileMemory how,
                             const ReadProgress& progress) {
  auto map = MappedFile::open(path, how, progress);
  GgufFile::Shard shard = parse_gguf(map->bytes(), path);
  shard.owner = map;
  return shard;
}

// An integer split.* key of a shard (any integer type), or nullopt when absent.
std::optional<uint64_t> split_key(const GgufFile::Shard& s, std::string_view key,
                                  const std::string& path) {
  const GgufValue* v = s.find(key);
  if (!v) return std::nullopt;
  return std::visit(
      [&](const auto& x) -> uint64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (x < 0)
            fail("gguf: {}: {} is {}, expected a non-negative integer", quote(path), quote(key), x);
          return static_cast<uint64_t>(x);
        } else {
          fail("gguf: {}: {} has type {}, expected an integer", quote(path), quote(key),
               gguf_type_name(v->type()));
        }
      },
      v->storage());
}

// Opens shards 2..count of a split file whose first shard is already parsed.
std::vector<GgufFile::Shard> open_split(GgufFile::Shard first, const std::string& path,
                                        uint64_t count, FileMemory how,
                                        const ReadProgress& progress) {
  if (count > kGgufMaxShards)
    fail("gguf: {}: {} is {}, more than the {} shards a split file can have", quote(path),
         quote(kGgufSplitCount), count, kGgufMaxShards);
  uint64_t no = split_key(first, kGgufSplitNo, path).value_or(0);
  auto name = parse_gguf_split_path(path);
  if (no != 0) {
    if (name)
      fail("gguf: {} is shard {} of {}; open the first shard {}", quote(path), no + 1, count,
           quote(gguf_split_path(name->prefix, 0, static_cast<uint32_t>(count))));
    fail("gguf: {} is shard {} of {}; open the first shard", quote(path), no + 1, count);
  }
  if (!name || name->index != 0 || name->count != count)
    fail(
        "gguf: {}: {} is {} but the file name does not follow the shard pattern "
        "'<name>-00001-of-{:05d}.gguf'",
        quote(path), quote(kGgufSplitCount), count, count);
  std::vector<GgufFile::Shard> shards;
  shards.reserve(count);
  shards.push_back(std::move(first));
  for (uint32_t i = 1; i < count; ++i) {
    std::string shard_path = gguf_split_path(name->prefix, i, static_cast<uint32_t>(count));
    std::error_code ec;
    if (!std::filesystem::exists(shard_path, ec))
      fail("gguf: split file {} is missing (shard {} of {} of {})", quote(shard_path), i + 1, count,
           quote(path));
    GgufFile::Shard s = parse_mapped(shard_path, how, progress);
    auto s_no = split_key(s, kGgufSplitNo, shard_path);
    auto s_count = split_key(s, kGgufSplitCount, shard_path);
    if (!s_no || !s_count)
      fail("gguf: {}: shard of {} lacks the {} / {} keys", quote(shard_path), quote(path),
           quote(kGgufSplitNo), quote(kGgufSplitCount));
    if (*s_no != i || *s_count != count)
      fail("gguf: {}: says it is shard {} of {}, expected shard {} of {}", quote(shard_path),
           *s_no + 1, *s_count, i + 1, count);
    shards.push_back(std::move(s));
  }
  if (auto total = split_key(shards[0], kGgufSplitTensorsCount, path)) {
    uint64_t found = 0;
    for (const auto& s : shards) found += s.tensors.size();
    if (*total != found)
      fail("gguf: {}: {} is {} but the {} shards hold {} tensors", quote(path),
           quote(kGgufSplitTensorsCount), *total, count, found);
  }
  return shards;
}

}  // namespace

uint64_t GgufTensor::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // cannot overflow: checked when the file was read
  return n;
}

GgufFile GgufFile::open(const std::string& path, FileMemory how, const ReadProgress& progress) {
  Shard first = parse_mapped(path, how, progress);
  auto count = split_key(first, kGgufSplitCount, path);
  if (!count || *count == 1) {
    std::vector<Shard> one;
    one.push_back(std::move(first));
    return from_shards(std::move(one));
  }
  if (*count == 0) fail("gguf: {}: {} is 0", quote(path), quote(kGgufSplitCount));
  return from_shards(open_split(std::move(first), path, *count, how, progress));
}

GgufFile GgufFile::from_bytes(std::span<const uint8_t> bytes) {
  std::vector<Shard> one;
  one.push_back(parse_gguf(bytes, ""));
  return from_shards(std::move(one));
}

GgufFile GgufFile::from_buffer(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  std::vector<Shard> one;
  one.push_back(parse_gguf(*owned, ""));
  one.back().owner = owned;
  return from_shards(std::move(one));
}

GgufFile GgufFile::from_shards(std::vector<Shard> shards) {
  UGRAD_ASSERT(!shards.empty());
  GgufFile f;
  f.version_ = shards[0].version;
  f.alignment_ = shards[0].alignment;
  f.shard_count_ = static_cast<uint32_t>(shards.size());
  f.kv_ = std::move(shards[0].kv);
  f.kv_index_.reserve(f.kv_.size());
  for (size_t i = 0; i < f.kv_.size(); ++i) f.kv_index_.emplace(f.kv_[i].key, i);
  size_t n_tensors = 0;
  for (const Shard& s : shards) n_tensors += s.tensors.size();
  f.tensors_.reserve(n_tensors);
  f.tensor_index_.reserve(n_tensors);
  for (uint32_t i = 0; i < shards.size(); ++i) {
    for (GgufTensor& t : shards[i].tensors) {
      t.shard = i;
      if (!f.tensor_index_.emplace(t.name, f.tensors_.size()).second)
        fail("gguf: tensor {} appears in more than one shard (again in shard {})", quote(t.name),
             i + 1);
      f.tensors_.push_back(std::move(t));
    }
    if (shards[i].owner) f.owners_.push_back(std::move(shards[i].owner));
  }
  return f;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const {
  const GgufTensor* t = find_tensor(name);
  if (!t) fail("gguf: no tensor named {} (the file has {} tensors)", quote(name), tensors_.size());
  return *t;
}

}  // namespace ugrad::llm
