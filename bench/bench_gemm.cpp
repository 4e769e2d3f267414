// fp32 GEMM C = A*B (row-major, square) at 512, 1024, 2048: ugrad's generated kernel vs OpenBLAS's
// cblas_sgemm and a naive triple loop, all measured in this run. Usage: bench_gemm [sizes...]
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/openblas_baseline.h"
#include "codegen/codegen.h"
#include "runtime/cpu_jit.h"
#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"
#include "runtime/thread_pool.h"

using namespace ugrad;

namespace {

UOp param(int64_t slot, int64_t n) {
  return UOp::make(Op::PARAM, dtypes::float32.ptr(), {},
                   ParamArg{slot, fmt::format("data{}", slot), 0, n});
}
UOp at(const UOp& b, const UOp& i) { return UOp::make(Op::INDEX, b.dtype(), {b, i}); }

UOp matmul_ast(int64_t n) {
  UOp c = param(0, n * n), a = param(1, n * n), b = param(2, n * n);
  UOp i = UOp::range(n, 0), j = UOp::range(n, 1), k = UOp::range(n, 2, AxisType::Reduce);
  UOp prod = UOp::make(Op::LOAD, dtypes::float32, {at(a, i * n + k)}) *
             UOp::make(Op::LOAD, dtypes::float32, {at(b, k * n + j)});
  UOp red = UOp::make(Op::REDUCE, dtypes::float32, {prod, k}, Op::ADD);
  UOp st = UOp::make(Op::STORE, dtypes::void_, {at(c, i * n + j), red});
  return UOp::make(Op::SINK, dtypes::void_, {st});
}

template <typename F>
double best_seconds(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_native_openblas_kernels(argv);
  std::vector<int64_t> sizes{512, 1024, 2048};
  if (argc > 1) {
    sizes.clear();
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  }
  const int64_t cores = ThreadPool::instance().num_threads();
  openblas_set_num_threads(int(cores));
  const LlvmTarget host = cpu_target(2);
  fmt::print("fp32 GEMM, {} cores ({}), OpenBLAS core {}\n", cores, CpuJit::instance().describe(),
             openblas_get_corename());
  fmt::print("{:>6} {:>12} {:>12} {:>12} {:>9} {:>9}  {}\n", "n", "ugrad GF/s", "OpenBLAS", "naive",
             "vs BLAS", "vs naive", "kernel / opts");
  for (int64_t n : sizes) {
    std::vector<float> a(n * n), b(n * n), c(n * n), ref(n * n);
    for (int64_t i = 0; i < n * n; ++i) {
      a[i] = float((i * 7) % 13) / 13.f - 0.5f;
      b[i] = float((i * 5) % 11) / 11.f - 0.5f;
    }
    const double flops = 2.0 * n * n * n;
    auto t_cg = std::chrono::steady_clock::now();
    KernelSource ks =
        codegen(matmul_ast(n), cpu_codegen_target(), {.noopt = 0, .max_threads = cores});
    const double codegen_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_cg).count();
    LlvmPhaseTimes llvm_ms;
    auto object = llvm_compile_object(host, ks.src, ks.name, &llvm_ms);
    auto program = CpuJit::instance().load(object, ks.name);
    auto fn = program->function<ThreadPool::RawKernel>(ks.entry);
    void* args[3] = {c.data(), a.data(), b.data()};
    // Rounds interleave ugrad and OpenBLAS, so load from other processes hits them alike.
    const int rounds = n <= 1024 ? 7 : 4;
    double t_ugrad = 1e30, t_blas = 1e30;
    for (int round = 0; round < rounds; ++round) {
      t_ugrad = std::min(
          t_ugrad, best_seconds([&] { ThreadPool::instance().run(fn, args, ks.cpu_threads); }, 1));
      t_blas = std::min(t_blas, best_seconds(
                                    [&] {
                                      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n),
                                                  int(n), int(n), 1.f, a.data(), int(n), b.data(),
                                                  int(n), 0.f, ref.data(), int(n));
                                    },
                                    1));
    }
    double max_err = 0;
    for (int64_t i = 0; i < n * n; ++i)
      max_err = std::max(max_err, double(std::fabs(c[i] - ref[i])));
    // Naive i-j-k loop, single thread, on a band of rows (scaled up) so 2048 stays quick.
    const int64_t rows = std::min<int64_t>(n, 64);
    double t_naive = best_seconds(
                         [&] {
                           for (int64_t i = 0; i < rows; ++i)
                             for (int64_t j = 0; j < n; ++j) {
                               float acc = 0;
                               for (int64_t k = 0; k < n; ++k) acc += a[i * n + k] * b[k * n + j];
                               c[i * n + j] = acc;
                             }
                         },
                         1) *
                     double(n) / double(rows);
    const double g = flops / t_ugrad / 1e9, gb = flops / t_blas / 1e9, gn = flops / t_naive / 1e9;
    fmt::print(
        "{:>6} {:>12.1f} {:>12.1f} {:>12.2f} {:>8.0f}% {:>8.1f}x  {} [{}] max|err| {:.2g}, "
        "codegen {:.1f} ms + LLVM {:.1f} ms\n",
        n, g, gb, gn, 100 * g / gb, g / gn, ks.name, ks.opts_desc, max_err, codegen_ms,
        llvm_ms.parse_ms + llvm_ms.optimize_ms + llvm_ms.codegen_ms);
  }
  return 0;
}
