// Qwen3 on the generic path: a Qwen3-0.6B-shaped model (28 layers, dim 1024, 16/8 heads of 128,
// ffn 3072, vocab 151936, random weights) in Q8_0 or Q4_K. Prefill (a 512-token prompt) and decode
// tok/s, decode against the memory-bandwidth roofline (bytes read per decoded token / read
// bandwidth measured in this run), and prefill model-FLOP/s against OpenBLAS fp32 GEMM in this run.
// The bytes per token are the weights plus the fp16 KV cache up to the mean decoded position: a
// long prompt (4032) measures decode at long context, where the cache is ~470 MB, as the weights.
//   bench_qwen3 [Q8_0|Q4_K] [layers] [prompt tokens] [decode tokens]
#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/llm_bench.h"
#include "bench/openblas_baseline.h"
#include "llm/config/demo_model.h"
#include "llm/models/generate.h"

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
  double best = 0;  // best of 5: OpenBLAS at its peak, as read_bandwidth() takes the memory's
  for (int r = 0; r < 5; ++r) {
    auto t0 = clock_type::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0,
                c.data(), n);
    best = std::max(best, 2.0 * n * n * n / seconds(t0) * 1e-9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_native_openblas_kernels(argv);
  const bench::LlmBenchArgs a = bench::parse_llm_bench_args(argc, argv, 28, 512);
  DemoModelOptions o;
  o.n_layers = a.layers;
  o.dim = 1024;
  o.n_heads = 16;
  o.n_kv_heads = 8;
  o.head_dim = 128;
  o.ffn_dim = 3072;
  o.vocab_size = 151936;
  o.weight_type = a.type;
  const bench::DemoRun demo = bench::run_demo("ugrad_bench_qwen3", o, a);
  const GgufFile& file = demo.file;
  const bench::GenerateRun& run = demo.run;
  const double weight_bytes = bench::weight_bytes(file);

  const double bw = bench::read_bandwidth(kThreads);
  // A decode step at position p reads the keys and values of p positions of every layer (fp16).
  const double mean_position = static_cast<double>(a.prompt_len) + (run.decoded - 1) / 2.0;
  const double kv_bytes =
      2.0 * a.layers * o.n_kv_heads * o.head_dim * sizeof(uint16_t) * mean_position;
  const double roofline_tps = bw * 1e9 / (weight_bytes + kv_bytes);
  // Prefill FLOPs: 2 per matrix parameter per token, less the output projection (token_embd,
  // tied), which runs for the last token of a chunk only.
  double params = 0;
  for (const GgufTensor& t : file.tensors())
    if (t.dims.size() == 2 && t.name != "token_embd.weight")
      params += static_cast<double>(t.dims[0] * t.dims[1]);
  const double prefill_gflops = 2.0 * params * run.prefill_tps * 1e-9;
  const double blas = openblas_gflops(1024);  // with OpenBLAS's own threads (2)
  std::printf(
      "model: %u layers, %s, %.1f MB of weights (+ %.1f MB of KV cache per decoded token at the "
      "mean "
      "position %.0f); warm-up (compiles) %.1f s\n",
      a.layers, a.type_name.c_str(), weight_bytes * 1e-6, kv_bytes * 1e-6, mean_position,
      run.warmup_seconds);
  std::printf(
      "prefill %lld tokens: %.2f tok/s (%s) = %.2f GFLOP/s (%.1f%% of OpenBLAS sgemm %.1f "
      "GFLOP/s)\n",
      static_cast<long long>(a.prompt_len), run.prefill_tps,
      bench::rounds_text(run.prefill_rounds).c_str(), prefill_gflops, 100 * prefill_gflops / blas,
      blas);
  std::printf(
      "decode %zu tokens: %.2f tok/s (%s); roofline %.2f tok/s at %.1f GB/s read -> %.1f%% of "
      "roofline\n",
      run.decoded, run.decode_tps, bench::rounds_text(run.decode_rounds).c_str(), roofline_tps, bw,
      100 * run.decode_tps / roofline_tps);
  return 0;
}
