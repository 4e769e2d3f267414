// Throughput of the scalar reference dequantizers (GB/s of output floats and of input bytes, and
// the ratio to memcpy of the same output size) and of the quantizers (MB/s of input floats).
// Single-threaded; and of the int8 linears' load-time copies (reorder_linear_int8 and
// pack_matmul_int8, thread pool).
// Usage: bench_quant [million elements to dequantize, default 16]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "llm/quant/dequantize.h"
#include "llm/quant/linear_int8.h"
#include "llm/quant/matmul_int8.h"
#include "llm/quant/quantize.h"

using namespace ugrad::llm;

namespace {

using Clock = std::chrono::steady_clock;

// Best of `reps` runs of fn, in seconds.
template <typename F>
double best_time(int reps, F&& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

// Valid blocks of type t for n elements: quantized random data where we can, else random bytes.
std::vector<uint8_t> make_blocks(GgmlType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(t, int64_t(x.size())));
  if (can_quantize(t)) {
    quantize(t, x, q);
  } else {
    std::mt19937 rng(1);
    for (auto& b : q) b = uint8_t(rng());
    if (t == GgmlType::MXFP4)
      for (size_t i = 0; i < q.size(); i += 17) q[i] = uint8_t(120 + q[i] % 16);  // sane scales
  }
  return q;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = size_t(argc > 1 ? std::atof(argv[1]) : 16.0) * 1000000 / 256 * 256;
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n), y(n), y2(n);
  for (float& v : x) v = dist(rng);

  const double out_gb = double(n) * sizeof(float) / 1e9;
  const double t_memcpy =
      best_time(5, [&] { std::memcpy(y2.data(), x.data(), n * sizeof(float)); });
  std::printf("dequantize %zu elements (%.0f MB of floats), single thread, best of 5\n", n,
              out_gb * 1e3);
  std::printf("memcpy baseline: %.2f GB/s (%.1f ms)\n\n", out_gb / t_memcpy, t_memcpy * 1e3);
  std::printf("%-7s %10s %10s %10s %9s\n", "format", "ms", "out GB/s", "in GB/s", "/memcpy");

  const GgmlType dq_types[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,
                               GgmlType::Q4_1,   GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                               GgmlType::Q4_K,   GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                               GgmlType::IQ4_XS, GgmlType::MXFP4};
  // Blocks come from a quantized prefix tiled to n elements (quantizing 16M elements with the
  // K searches would dominate the run).
  const size_t nq = std::min<size_t>(n, 1 << 20);
  const std::vector<float> xq(x.begin(), x.begin() + long(nq));
  for (GgmlType t : dq_types) {
    const std::vector<uint8_t> prefix = make_blocks(t, xq);
    std::vector<uint8_t> q(row_bytes(t, int64_t(n)));
    for (size_t off = 0; off < q.size(); off += prefix.size())
      std::memcpy(&q[off], prefix.data(), std::min(prefix.size(), q.size() - off));
    const double t_dq = best_time(5, [&] { dequantize(t, q, y); });
    std::printf("%-7s %10.1f %10.2f %10.2f %9.2f\n", format_of(t).name.data(), t_dq * 1e3,
                out_gb / t_dq, double(q.size()) / 1e9 / t_dq, t_memcpy / t_dq);
  }

  std::printf("\nquantize %zu elements, single thread, best of 3\n", nq);
  std::printf("%-7s %10s %12s\n", "format", "ms", "in MB/s");
  const GgmlType q_types[] = {GgmlType::F16,   GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                              GgmlType::Q5_0,  GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q4_K,
                              GgmlType::Q5_K,  GgmlType::Q6_K, GgmlType::Q8_K, GgmlType::IQ4_NL,
                              GgmlType::IQ4_XS};
  for (GgmlType t : q_types) {
    std::vector<uint8_t> q(row_bytes(t, int64_t(nq)));
    const double t_q = best_time(3, [&] { quantize(t, xq, q); });
    std::printf("%-7s %10.1f %12.1f\n", format_of(t).name.data(), t_q * 1e3,
                double(nq) * sizeof(float) / 1e6 / t_q);
  }

  // The int8 linears' load-time copies of one weight of rows of 4096 (whole groups of blocks).
  const int64_t in = 4096, out = static_cast<int64_t>(n) / in;
  std::printf("\nload-time copies of a (%lld, %lld) weight, best of 3: ms (GB/s of blocks read)\n",
              static_cast<long long>(out), static_cast<long long>(in));
  std::printf("%-7s %22s %22s\n", "format", "reorder_linear_int8", "pack_matmul_int8");
  for (GgmlType t :
       {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::Q8_0}) {
    const std::vector<uint8_t> prefix = make_blocks(t, xq);
    std::vector<std::byte> q(row_bytes(t, out * in));
    for (size_t off = 0; off < q.size(); off += prefix.size())
      std::memcpy(&q[off], prefix.data(), std::min(prefix.size(), q.size() - off));
    auto cell = [&](bool takes, const auto& copy) {
      char text[32] = "-";
      if (takes) {
        const double s = best_time(3, copy);
        std::snprintf(text, sizeof text, "%.1f (%.2f)", s * 1e3, double(q.size()) / 1e9 / s);
      }
      return std::string(text);
    };
    const std::string reorder =
        cell(linear_int8_supports(t, in), [&] { reorder_linear_int8(t, q); });
    const std::string pack =
        cell(matmul_int8_supports(t, in), [&] { pack_matmul_int8(t, q, out, in, "CPU"); });
    std::printf("%-7s %22s %22s\n", format_of(t).name.data(), reorder.c_str(), pack.c_str());
  }
  return 0;
}
