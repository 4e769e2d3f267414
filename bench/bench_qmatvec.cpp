// Quantized linears on the generic path (a lazy dequantize expression fused into the matmul
// kernel), Qwen3-0.6B shapes, Q8_0 and Q4_K by default. For each weight (out, in):
//   x (1, in):  matvec GB/s of weight bytes against the read bandwidth measured in this run
//               (the decode roofline);
//   x (32, in): matmul GFLOP/s against OpenBLAS sgemm of the same shape (fp32 weights) in this run
//               (a prefill chunk).
// Each weight is a model Linear (llm/kernels/linear.h): a Q4_K matvec quantizes x to int8 and runs
// DOT4 where the host has VNNI. Results are checked against OpenBLAS on the reference-dequantized
// weights (for Q4_K with x unrounded: its max err includes the int8 rounding).
//   bench_qmatvec [all|TYPE[,TYPE...]] [OUTxIN ...]   (TYPE: a ggml type name, e.g. Q6_K, IQ4_XS)
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/openblas_baseline.h"
#include "llm/kernels/linear.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/formats.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/quantize.h"
#include "runtime/thread_pool.h"
#include "tensor/jit.h"
#include "tensor/tensor.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int64_t kPrefillRows = 32;  // generate() prefills in chunks of 32 tokens

struct Weight {
  std::vector<uint8_t> bytes;  // the ggml blocks
  std::vector<float> deq;      // reference dequantized, (out, in) row-major
  Linear linear;               // over the bytes, as a model loads it
};

Weight make_weight(GgmlType type, int64_t out, int64_t in, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(size_t(out * in));
  for (float& f : w) f = normal(rng);
  Weight r;
  r.bytes.resize(row_bytes(type, out * in));
  quantize(type, w, r.bytes);
  r.deq.resize(w.size());
  dequantize(type, r.bytes, r.deq);
  GgufTensor t;
  t.dims = {static_cast<uint64_t>(in), static_cast<uint64_t>(out)};
  t.type = type;
  t.data = r.bytes;
  r.linear = load_linear(t, "CPU");  // the bytes stay put: Weight is moved, never copied
  return r;
}

// Comma-separated ggml type names that quantize and dequantize_lazy both support.
std::vector<GgmlType> parse_types(const std::string& list) {
  std::vector<GgmlType> types;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    const QuantFormat* found = nullptr;
    for (const QuantFormat& f : all_formats())
      if (f.name == name) found = &f;
    if (!found || !can_quantize(found->type) || !can_dequantize_lazy(found->type)) {
      fmt::print(stderr, "bench_qmatvec: unsupported type '{}'\n", name);
      std::exit(2);
    }
    types.push_back(found->type);
    start = end + 1;
  }
  return types;
}

struct Run {
  double seconds;
  double max_err;  // max |y - y_blas| / max |y_blas|
};

// Times y = x.linear(w) replayed by the JIT and checks it against OpenBLAS on `deq`.
Run time_linear(const Weight& w, int64_t rows, int64_t out, int64_t in, std::mt19937& rng,
                double& blas_seconds) {
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> xs(size_t(rows * in));
  for (float& f : xs) f = uni(rng);
  Tensor x = Tensor::from_vector(xs, {rows, in}, dtypes::float32, "CPU");
  x.realize();
  const Linear lin = w.linear;
  TensorJit jit([lin](const std::vector<Tensor>& in) { return std::vector<Tensor>{lin(in[0])}; });
  Tensor y;
  for (int i = 0; i < 3; ++i) y = jit({x})[0];  // eager, capture, first replay
  std::vector<float> got = y.to_vector<float>(), ref(size_t(rows * out));
  auto blas = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(rows), int(out), int(in), 1.f,
                xs.data(), int(in), w.deq.data(), int(in), 0.f, ref.data(), int(out));
  };
  blas();
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, double(std::fabs(got[i] - ref[i])));
    scale = std::max(scale, double(std::fabs(ref[i])));
  }
  // Rounds interleave ugrad and OpenBLAS so load from other processes hits both alike.
  double t = 1e30;
  blas_seconds = 1e30;
  for (int round = 0; round < 3; ++round) {
    t = std::min(t, bench::best_call_seconds([&] { jit({x}); }));
    blas_seconds = std::min(blas_seconds, bench::best_call_seconds(blas));
  }
  return {t, err / std::max(scale, 1e-30)};
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_native_openblas_kernels(argv);
  std::vector<GgmlType> types{GgmlType::Q8_0, GgmlType::Q4_K};
  if (argc > 1 && std::string(argv[1]) != "all") types = parse_types(argv[1]);
  std::vector<std::pair<int64_t, int64_t>> shapes{
      {1024, 1024}, {3072, 1024}, {1024, 3072}, {151936, 1024}};
  if (argc > 2) {
    shapes.clear();
    for (int i = 2; i < argc; ++i) {
      std::string s = argv[i];
      size_t x = s.find('x');
      shapes.emplace_back(std::stoll(s.substr(0, x)), std::stoll(s.substr(x + 1)));
    }
  }
  const int64_t cores = ThreadPool::instance().num_threads();
  openblas_set_num_threads(int(cores));
  const double bw = bench::read_bandwidth(int(cores));
  fmt::print("quantized linear, {} threads, read bandwidth {:.2f} GB/s, OpenBLAS core {}\n", cores,
             bw, openblas_get_corename());
  fmt::print("{:<6} {:>13} | {:>9} {:>9} {:>8} | {:>10} {:>10} {:>8} | {:>8}\n", "type", "out x in",
             "mv GB/s", "mv ms", "roofline", "mm GFLOP/s", "BLAS", "vs BLAS", "max err");
  std::mt19937 rng(1234);
  for (GgmlType type : types)
    for (auto [out, in] : shapes) {
      Weight w = make_weight(type, out, in, rng);
      double blas1 = 0, blas32 = 0;
      Run mv = time_linear(w, 1, out, in, rng, blas1);
      Run mm = time_linear(w, kPrefillRows, out, in, rng, blas32);
      const double gbs = double(w.bytes.size()) / mv.seconds * 1e-9;
      const double flops = 2.0 * double(kPrefillRows * out * in);
      const double gf = flops / mm.seconds * 1e-9, gf_blas = flops / blas32 * 1e-9;
      fmt::print(
          "{:<6} {:>13} | {:>9.2f} {:>9.3f} {:>7.1f}% | {:>10.2f} {:>10.2f} {:>7.1f}% | "
          "{:>8.1e}\n",
          format_of(type).name, fmt::format("{}x{}", out, in), gbs, mv.seconds * 1e3,
          100 * gbs / bw, gf, gf_blas, 100 * gf / gf_blas, std::max(mv.max_err, mm.max_err));
    }
  return 0;
}
