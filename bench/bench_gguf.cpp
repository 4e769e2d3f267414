// Opening a ~800 MB GGUF: writes a Qwen3-0.6B-shaped Q8_0 file (real tensor names and sizes, a
// 151936-token vocabulary in the metadata) to a temp dir, then times GgufFile::open plus listing
// every tensor and reading every metadata value. Baselines from the same run: read() of the
// file's first MiB, and mmap + touching every page of the metadata region by hand.
// Usage: bench_gguf [runs]   (TMPDIR picks the directory; the file is deleted afterwards)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "llm/gguf/gguf.h"
#include "llm/gguf/writer.h"

using namespace ugrad::llm;
using Clock = std::chrono::steady_clock;

namespace {

// Qwen3-0.6B (docs/qwen.md#real-model-sizes), with an untied output matrix to reach ~800 MB.
constexpr uint64_t kLayers = 28, kEmbd = 1024, kFf = 3072, kHeads = 16, kKvHeads = 8,
                   kHeadDim = 128, kVocab = 151936;
constexpr size_t kBaselineReadBytes = 1 << 20;
constexpr size_t kPage = 4096;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct TempFile {
  std::string path;
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

uint64_t q8_bytes(uint64_t ne0, uint64_t ne1) { return ne0 / 32 * 34 * ne1; }

// Builds the model in a writer; tensor bytes are borrowed from `pool` (one shared buffer).
GgufWriter build_model(std::vector<uint8_t>& pool, std::vector<std::string>& tokens,
                       std::vector<std::string>& merges, std::vector<int32_t>& token_types) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_string("general.name", "Qwen3 0.6B (synthetic)");
  w.set_u32("general.file_type", 7);  // MOSTLY_Q8_0
  w.set_u32("general.quantization_version", 2);
  w.set_u32("qwen3.block_count", kLayers);
  w.set_u32("qwen3.context_length", 40960);
  w.set_u32("qwen3.embedding_length", kEmbd);
  w.set_u32("qwen3.feed_forward_length", kFf);
  w.set_u32("qwen3.attention.head_count", kHeads);
  w.set_u32("qwen3.attention.head_count_kv", kKvHeads);
  w.set_u32("qwen3.attention.key_length", kHeadDim);
  w.set_u32("qwen3.attention.value_length", kHeadDim);
  w.set_f32("qwen3.rope.freq_base", 1e6f);
  w.set_f32("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "qwen2");
  for (uint64_t i = 0; i < kVocab; ++i) {
    tokens.push_back(fmt::format("tok{}", i * 2654435761u % 1000003));
    token_types.push_back(i < kVocab - 200 ? 1 : 3);
  }
  for (uint64_t i = 0; i + 549 < kVocab; ++i) merges.push_back(fmt::format("m{} {}", i % 9973, i));
  w.set_array_strings("tokenizer.ggml.tokens", tokens);
  w.set_array<int32_t>("tokenizer.ggml.token_type", token_types);
  w.set_array_strings("tokenizer.ggml.merges", merges);
  w.set_u32("tokenizer.ggml.eos_token_id", 151645);
  w.set_bool("tokenizer.ggml.add_bos_token", false);

  pool.assign(q8_bytes(kEmbd, kVocab), 0);
  for (size_t i = 0; i < pool.size(); i += kPage) pool[i] = static_cast<uint8_t>(i / kPage);
  auto q8 = [&](const std::string& name, uint64_t ne0, uint64_t ne1) {
    w.add_tensor_ref(name, {ne0, ne1}, GgmlType::Q8_0, {pool.data(), q8_bytes(ne0, ne1)});
  };
  auto f32 = [&](const std::string& name, uint64_t n) {
    w.add_tensor_ref(name, {n}, GgmlType::F32, {pool.data(), n * 4});
  };
  q8("token_embd.weight", kEmbd, kVocab);
  for (uint64_t l = 0; l < kLayers; ++l) {
    std::string p = fmt::format("blk.{}.", l);
    f32(p + "attn_norm.weight", kEmbd);
    q8(p + "attn_q.weight", kEmbd, kHeads * kHeadDim);
    q8(p + "attn_k.weight", kEmbd, kKvHeads * kHeadDim);
    q8(p + "attn_v.weight", kEmbd, kKvHeads * kHeadDim);
    q8(p + "attn_output.weight", kHeads * kHeadDim, kEmbd);
    f32(p + "attn_q_norm.weight", kHeadDim);
    f32(p + "attn_k_norm.weight", kHeadDim);
    f32(p + "ffn_norm.weight", kEmbd);
    q8(p + "ffn_gate.weight", kEmbd, kFf);
    q8(p + "ffn_up.weight", kEmbd, kFf);
    q8(p + "ffn_down.weight", kFf, kEmbd);
  }
  f32("output_norm.weight", kEmbd);
  q8("output.weight", kEmbd, kVocab);
  return w;
}

// What a model loader does right after opening: list tensors, read every metadata value.
uint64_t open_and_read(const std::string& path) {
  GgufFile f = GgufFile::open(path);
  uint64_t sum = 0;
  for (const GgufTensor& t : f.tensors()) sum += t.nbytes + t.name.size() + t.dims[0];
  for (const GgufKV& kv : f.metadata()) sum += kv.value.to_display_string().size();
  sum += f.get_array_strings("tokenizer.ggml.tokens").size();
  sum += f.get_array_strings("tokenizer.ggml.merges").size();
  sum += f.get_array_i32("tokenizer.ggml.token_type").size();
  sum += f.get_u32("qwen3.block_count");
  return sum;
}

double time_read_1mib(const std::string& path) {
  std::vector<char> buf(kBaselineReadBytes);
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  ssize_t got = ::read(fd, buf.data(), buf.size());
  ::close(fd);
  double ms = ms_since(t0);
  if (got != static_cast<ssize_t>(buf.size())) std::fprintf(stderr, "short read\n");
  return ms;
}

double time_mmap_touch(const std::string& path, size_t bytes, size_t file_size) {
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  void* p = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  volatile uint64_t sum = 0;
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += kPage) sum = sum + b[i];
  ::munmap(p, file_size);
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  try {
    TempFile file{(std::filesystem::temp_directory_path() /
                   fmt::format("ugrad_bench_gguf_{}.gguf", ::getpid()))
                      .string()};
    std::vector<uint8_t> pool;
    std::vector<std::string> tokens, merges;
    std::vector<int32_t> token_types;
    auto t0 = Clock::now();
    GgufWriter w = build_model(pool, tokens, merges, token_types);
    w.write(file.path);
    double write_ms = ms_since(t0);
    size_t file_size = std::filesystem::file_size(file.path);

    // Drop the file from the page cache (after flushing it) for one cold open.
    int fd = ::open(file.path.c_str(), O_RDONLY);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    t0 = Clock::now();
    uint64_t check = open_and_read(file.path);
    double cold_ms = ms_since(t0);

    std::vector<double> open_ms, open_only_ms, read_ms, touch_ms;
    GgufFile f = GgufFile::open(file.path);
    // The metadata region: everything before the data section.
    size_t meta_bytes = f.tensors()[0].file_offset - f.tensors()[0].offset;
    for (int i = 0; i < runs; ++i) {
      auto t = Clock::now();
      check += open_and_read(file.path);
      open_ms.push_back(ms_since(t));
      t = Clock::now();
      check += GgufFile::open(file.path).tensors().size();
      open_only_ms.push_back(ms_since(t));
      read_ms.push_back(time_read_1mib(file.path));
      touch_ms.push_back(time_mmap_touch(file.path, meta_bytes, file_size));
    }
    double open_med = median(open_ms), read_med = median(read_ms), touch_med = median(touch_ms);
    std::printf(
        "bench_gguf: %.1f MB file, %zu tensors, %zu keys, %zu-token vocabulary (written in "
        "%.0f ms); medians of %d warm runs\n",
        file_size / 1e6, f.tensors().size(), f.metadata().size(), tokens.size(), write_ms, runs);
    std::printf("  open + list tensors + read all metadata   %8.2f ms (cold cache: %.2f ms)\n",
                open_med, cold_ms);
    std::printf("  GgufFile::open alone                      %8.2f ms\n", median(open_only_ms));
    std::printf("  baseline: read() of the first 1 MiB       %8.3f ms  open+read is %.1fx\n",
                read_med, open_med / read_med);
    std::printf("  baseline: mmap + touch %.1f MB of metadata %8.3f ms  open+read is %.1fx\n",
                meta_bytes / 1e6, touch_med, open_med / touch_med);
    std::printf("  (checksum %llu)\n", static_cast<unsigned long long>(check));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gguf: %s\n", e.what());
    return 1;
  }
  return 0;
}
