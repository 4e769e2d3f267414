// Qwen3 on the generic path: a Qwen3-0.6B-shaped model (28 layers, dim 1024, 16/8 heads of 128,
// ffn 3072, vocab 151936, random weights) in Q8_0 or Q4_K. Prefill (a 512-token prompt) and decode
// tok/s, decode against the memory-bandwidth roofline (weight bytes per token / read bandwidth
// measured in this run), and prefill model-FLOP/s against OpenBLAS fp32 GEMM in this run.
//   bench_qwen3 [Q8_0|Q4_K] [layers] [prompt tokens] [decode tokens]
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/openblas_baseline.h"
#include "llm/model/demo_model.h"
#include "llm/models/generate.h"
#include "llm/quant/formats.h"

using namespace ugrad;
using namespace ugrad::llm;
using bench::clock_type;
using bench::seconds;

constexpr int kThreads = 2;  // the bench machine's cores; THREADS defaults to one per core

namespace {

double openblas_gflops(int n) {
  std::vector<float> a(size_t(n) * n, 1.0f), b(size_t(n) * n, 0.5f), c(size_t(n) * n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0,
              c.data(), n);
  auto t0 = clock_type::now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0,
              c.data(), n);
  return 2.0 * n * n * n / seconds(t0) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_native_openblas_kernels(argv);
  std::string type_name = argc > 1 ? argv[1] : "Q8_0";
  uint32_t layers = argc > 2 ? std::stoi(argv[2]) : 28;
  int64_t prompt_len = argc > 3 ? std::stoi(argv[3]) : 512;
  int64_t decode_len = argc > 4 ? std::stoi(argv[4]) : 32;
  GgmlType type = type_name == "Q4_K" ? GgmlType::Q4_K : GgmlType::Q8_0;

  DemoModelOptions o;
  o.n_layers = layers;
  o.dim = 1024;
  o.n_heads = 16;
  o.n_kv_heads = 8;
  o.head_dim = 128;
  o.ffn_dim = 3072;
  o.vocab_size = 151936;
  o.weight_type = type;
  std::string path =
      (std::filesystem::temp_directory_path() / ("ugrad_bench_qwen3_" + type_name + ".gguf"))
          .string();
  auto t0 = clock_type::now();
  write_demo_model(path, o);
  std::printf("wrote %s in %.1f s\n", path.c_str(), seconds(t0));

  GgufFile file = GgufFile::open(path);
  double weight_bytes =
      0;  // read once per decoded token (the embedding table is tied: read as output)
  for (const GgufTensor& t : file.tensors()) weight_bytes += static_cast<double>(t.nbytes);
  std::unique_ptr<LanguageModel> model = load_model(file, prompt_len + decode_len + 1, "CPU");
  Generator gen(*model);
  std::vector<int32_t> prompt(prompt_len);
  for (int64_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<int32_t>((i * 7919) % 150000);

  // Warm-up: captures the JITs of the chunk lengths used (compiles are not timed).
  GenerateOptions warm;
  warm.max_tokens = 3;
  gen.generate(prompt, warm);
  GenerateOptions g;
  g.max_tokens = decode_len;
  std::vector<int32_t> other = prompt;
  other[0] += 1;  // no prefix reuse
  GenerateResult r = gen.generate(other, g);
  double prefill_tps = static_cast<double>(prompt_len) / r.prefill_seconds;
  double decode_tps = static_cast<double>(r.tokens.size() - 1) / r.decode_seconds;

  double bw = bench::read_bandwidth(kThreads);
  double roofline_tps = bw * 1e9 / weight_bytes;
  double params = 0;  // matmul parameters per token: the model FLOPs are 2 per parameter
  for (const GgufTensor& t : file.tensors())
    if (t.dims.size() == 2 && t.name != "token_embd.weight")
      params += static_cast<double>(t.dims[0] * t.dims[1]);
  params += static_cast<double>(o.dim) * o.vocab_size;  // tied output projection (last token only)
  double prefill_gflops =
      2.0 * (params - static_cast<double>(o.dim) * o.vocab_size) * prefill_tps * 1e-9;
  double blas = openblas_gflops(1024);  // with OpenBLAS's own threads (2)
  std::printf("model: %u layers, %s, %.1f MB of weights\n", layers, type_name.c_str(),
              weight_bytes * 1e-6);
  std::printf(
      "prefill %lld tokens: %.2f tok/s = %.2f GFLOP/s (%.1f%% of OpenBLAS sgemm %.1f GFLOP/s)\n",
      static_cast<long long>(prompt_len), prefill_tps, prefill_gflops, 100 * prefill_gflops / blas,
      blas);
  std::printf(
      "decode %zu tokens: %.2f tok/s; roofline %.2f tok/s at %.1f GB/s read -> %.1f%% of "
      "roofline\n",
      r.tokens.size(), decode_tps, roofline_tps, bw, 100 * decode_tps / roofline_tps);
  std::filesystem::remove(path);
  return 0;
}
