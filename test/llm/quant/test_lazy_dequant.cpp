// Lazy dequantization (tensor expressions) against the reference dequantizers, every format.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "base/error.h"
#include "codegen/codegen.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/quantize.h"
#include "runtime/cpu_jit.h"
#include "runtime/jit.h"
#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"
#include "runtime/realize.h"
#include "runtime/thread_pool.h"
#include "schedule/schedule.h"
#include "test/codegen/kernel_harness.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Blocks of `type` for n elements: quantized random data where a quantizer exists, otherwise
// random bytes with every 16-bit scale field made a small finite half.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> bytes(row_bytes(type, n));
  if (can_quantize(type)) {
    quantize(type, x, bytes);
  } else if (type == GgmlType::F32) {
    std::memcpy(bytes.data(), x.data(), bytes.size());
  } else {
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  }
  return bytes;
}

Tensor uint8_tensor(const std::vector<uint8_t>& bytes) {
  return Tensor::from_bytes(std::as_bytes(std::span(bytes)), {static_cast<int64_t>(bytes.size())},
                            dtypes::uint8);
}

// The one kernel of x.linear(w) for a lazily dequantized w, compiled with the heuristic's opts
// (noopt 0) or none (noopt 1) and run on `cores` cores over the host data.
struct LinearRun {
  std::vector<float> y;
  KernelSource ks;
};
LinearRun run_linear(GgmlType type, const std::vector<uint8_t>& bytes, const std::vector<float>& x,
                     int64_t rows, int64_t out, int64_t in, int noopt, int64_t cores = 0,
                     const CodegenTarget& target = cpu_codegen_target()) {
  Tensor raw = uint8_tensor(bytes), xt = Tensor::from_vector(x, {rows, in});
  raw.realize();
  xt.realize();
  Tensor y = xt.linear(dequantize_lazy(raw, type, {out, in}));
  Schedule s = create_schedule({y.node()});
  REQUIRE(s.items.size() == 1);
  LinearRun r;
  r.ks = codegen(s.items[0].ast, target, {.noopt = noopt, .max_threads = 2});
  static const LlvmTarget host = cpu_target();
  auto program = CpuJit::instance().load(llvm_compile_object(host, r.ks.src, r.ks.name), r.ks.name);
  r.y.assign(static_cast<size_t>(rows * out), 0.f);
  // Slot 0 is y; the weight bytes and x are read from the host vectors, other inputs (constant
  // tables of the format) from their buffers.
  std::vector<void*> args{r.y.data()};
  for (size_t slot = 1; slot < s.items[0].buffers.size(); ++slot) {
    const UOp& b = s.items[0].buffers[slot];
    args.push_back(b == realized_buffer(raw.node()) ? const_cast<uint8_t*>(bytes.data())
                   : b == realized_buffer(xt.node())
                       ? static_cast<void*>(const_cast<float*>(x.data()))
                       : buffer_of(b)->handle());
  }
  ThreadPool::instance().run(program->function<ThreadPool::RawKernel>(r.ks.entry), args.data(),
                             cores > 0 ? cores : r.ks.cpu_threads);
  return r;
}

// Optimized equals NOOPT up to summation order (relative to the largest output); non-finite
// outputs (random scale bytes) must agree in kind.
void check_same_as_noopt(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double scale = 0;
  for (float v : want)
    if (std::isfinite(v)) scale = std::max(scale, double(std::fabs(v)));
  int64_t mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i)
    mismatches +=
        std::isfinite(want[i]) ? std::fabs(got[i] - want[i]) > 1e-5 * scale : std::isfinite(got[i]);
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("quantized linears: the optimized kernel equals NOOPT for every lazy format") {
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    CAPTURE(f.name);
    const int64_t out = 8, in = 512;
    std::vector<uint8_t> bytes =
        random_blocks(f.type, out * in, 11 + static_cast<uint32_t>(f.type));
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0, 1);
    for (int64_t rows : {1, 4}) {
      CAPTURE(rows);
      std::vector<float> x(static_cast<size_t>(rows * in));
      for (float& v : x) v = normal(rng);
      LinearRun ref = run_linear(f.type, bytes, x, rows, out, in, 1);
      LinearRun opt = run_linear(f.type, bytes, x, rows, out, in, 0);
      CAPTURE(opt.ks.opts_desc);
      check_same_as_noopt(opt.y, ref.y);
    }
  }
}

TEST_CASE("quantized linears: Qwen3 shapes get vector lanes per block and equal NOOPT") {
  // Decode (1 row) and a prefill chunk (32 rows) against (out, in) weights with Qwen3-0.6B's in
  // dims; out is small here (the opts depend on it only through divisibility). Q6_K is the output
  // weight (and some ffn_down) of Q4_K_M files. IQ4_XS's two nibbles of a byte sit 16 elements
  // apart: 16 lanes.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                        GgmlType::Q6_K, GgmlType::IQ4_XS})
    for (int64_t in : {1024, 3072})
      for (int64_t rows : {1, 32}) {
        const int64_t out = 16;
        CAPTURE(format_of(type).name);
        CAPTURE(in);
        CAPTURE(rows);
        std::vector<uint8_t> bytes = random_blocks(type, out * in, 17);
        std::mt19937 rng(6);
        std::normal_distribution<float> normal(0, 1);
        std::vector<float> x(static_cast<size_t>(rows * in));
        for (float& v : x) v = normal(rng);
        LinearRun ref = run_linear(type, bytes, x, rows, out, in, 1);
        std::vector<float> wf(static_cast<size_t>(out * in));
        dequantize(type, bytes, wf);
        for (int64_t r = 0; r < rows; r += 31)
          for (int64_t o = 0; o < out; ++o) {
            double sum = 0;
            for (int64_t i = 0; i < in; ++i) sum += double(x[r * in + i]) * wf[o * in + i];
            CHECK(ref.y[r * out + o] == doctest::Approx(sum).epsilon(1e-4));
          }
        for (int64_t cores : {1, 2, 3}) {
          LinearRun opt =
              run_linear(type, bytes, x, rows, out, in, 0, cores, test::avx512_width_target());
          CAPTURE(opt.ks.opts_desc);
          // One block (32 elements) of lanes for a matvec; 16 lanes (one AVX-512 register) at 32
          // rows, where copies of rows and outputs (8 x 2, Q8_0's 4 x 4) share each dequantized
          // vector and each row of x.
          const bool lanes16 = type == GgmlType::IQ4_XS || rows == 32;
          const std::string lanes = lanes16 ? "v16f32" : "v32f32";
          CHECK(opt.ks.opts_desc.find("UNROLL(") != std::string::npos);
          CHECK(opt.ks.src.find("llvm.vector.reduce.fadd." + lanes) != std::string::npos);
          CHECK(opt.ks.src.find("masked.gather") == std::string::npos);
          CHECK(opt.ks.src.find("masked.load") == std::string::npos);
          if (rows == 32) CHECK(opt.ks.opts_desc.find("UPCAST(0,") != std::string::npos);
          check_same_as_noopt(opt.y, ref.y);
        }
      }
}

TEST_CASE("quantized linears: a gated FFN's gate and up share one kernel with lanes in both") {
  // silu(x Wg^T) * (x Wu^T), Q8_0, as Qwen3's FFN computes it; against NOOPT.
  const int64_t rows = 4, out = 16, in = 256;
  std::vector<uint8_t> gate = random_blocks(GgmlType::Q8_0, out * in, 21),
                       up = random_blocks(GgmlType::Q8_0, out * in, 22);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> xv(static_cast<size_t>(rows * in));
  for (float& v : xv) v = normal(rng);
  Tensor g = uint8_tensor(gate), u = uint8_tensor(up), x = Tensor::from_vector(xv, {rows, in});
  Tensor y = x.linear(dequantize_lazy(g, GgmlType::Q8_0, {out, in})).silu() *
             x.linear(dequantize_lazy(u, GgmlType::Q8_0, {out, in}));
  Schedule s = create_schedule({y.node()});
  REQUIRE(s.items.size() == 1);
  std::vector<std::vector<float>> results;
  for (int noopt : {1, 0}) {
    KernelSource ks =
        codegen(s.items[0].ast, cpu_codegen_target(), {.noopt = noopt, .max_threads = 2});
    CAPTURE(ks.opts_desc);
    if (!noopt) CHECK(ks.src.find("llvm.vector.reduce.fadd.v") != std::string::npos);
    static const LlvmTarget host = cpu_target();
    auto program = CpuJit::instance().load(llvm_compile_object(host, ks.src, ks.name), ks.name);
    std::vector<float> yv(static_cast<size_t>(rows * out));
    std::vector<void*> args{yv.data()};
    for (size_t slot = 1; slot < s.items[0].buffers.size(); ++slot)
      args.push_back(buffer_of(s.items[0].buffers[slot])->handle());
    ThreadPool::instance().run(program->function<ThreadPool::RawKernel>(ks.entry), args.data(),
                               ks.cpu_threads);
    results.push_back(yv);
  }
  CHECK(std::any_of(results[0].begin(), results[0].end(), [](float v) { return v != 0; }));
  check_same_as_noopt(results[1], results[0]);
}

TEST_CASE("lazy dequantization matches the reference dequantizer for every supported format") {
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    CAPTURE(f.name);
    int64_t n = 4 * 256;
    std::vector<uint8_t> bytes = random_blocks(f.type, n, 7 + static_cast<uint32_t>(f.type));
    std::vector<float> want(n);
    dequantize(f.type, bytes, want);
    std::vector<float> got =
        dequantize_lazy(uint8_tensor(bytes), f.type, {4, 256}).to_vector<float>();
    REQUIRE(got.size() == want.size());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool same = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]));
      // A fused multiply-add may round the affine formats' d*q + m once instead of twice.
      if (!same && std::abs(got[i] - want[i]) <= 1e-6f * (1 + std::abs(want[i]))) same = true;
      mismatches += !same;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("every format the reference can dequantize has a lazy form (except Q8_K)") {
  for (const QuantFormat& f : all_formats())
    if (can_dequantize(f.type) && f.type != GgmlType::Q8_K)
      CHECK_MESSAGE(can_dequantize_lazy(f.type), f.name);
}

TEST_CASE("dequantization fuses into the consuming matmul") {
  int64_t out = 8, in = 256;
  std::vector<uint8_t> bytes = random_blocks(GgmlType::Q4_K, out * in, 3);
  Tensor w = dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {out, in});
  Tensor x = Tensor::randn({2, in});
  x.realize();
  JitStats before = jit_stats();
  Tensor y = x.matmul(w.transpose());
  std::vector<float> got = y.to_vector<float>();
  CHECK(jit_stats().schedules - before.schedules == 1);
  std::vector<float> wf(out * in);
  dequantize(GgmlType::Q4_K, bytes, wf);
  std::vector<float> xv = x.to_vector<float>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += double(xv[r * in + i]) * wf[o * in + i];
      CHECK(got[r * out + o] == doctest::Approx(s).epsilon(1e-4));
    }
}

TEST_CASE("bad raw data is an error naming the format") {
  std::vector<uint8_t> bytes(143);
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {256}),
                       doctest::Contains("Q4_K: 256 elements need 144 bytes, got 143"), Error);
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {100}),
                       doctest::Contains("block size 256"), Error);
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q2_K, {256}),
                       doctest::Contains("Q2_K: 256 elements need 84 bytes, got 143"), Error);
  std::vector<uint8_t> truncated(109);  // one Q3_K block less a byte
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(truncated), GgmlType::Q3_K, {256}),
                       doctest::Contains("Q3_K: 256 elements need 110 bytes, got 109"), Error);
  CHECK_THROWS_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::IQ2_XXS, {256}), Error);
}

// Regression: constants inside the lazy forms (bit masks, lookup levels, half masks) were made on
// the default device, so a weight on another device failed to build ("where: operands on
// different devices AMD, CPU and CPU" for Q4_K and IQ4_XS on DEV=AMD).
TEST_CASE("lazy dequantization builds and runs on a device other than the default") {
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    CAPTURE(f.name);
    std::vector<uint8_t> bytes = random_blocks(f.type, 256, 3);
    Tensor raw =
        Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}, dtypes::uint8, "NULL");
    Tensor w = dequantize_lazy(raw, f.type, {1, 256});
    CHECK(w.device() == "NULL");
    CHECK_NOTHROW(w.realize());
  }
}
