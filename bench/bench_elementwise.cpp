// Memory-bound kernels over 64 MiB of float32: c = a + b and a full sum, in GB/s, against memcpy
// bandwidth measured in the same run (1 thread and all cores).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/cpu_jit.h"
#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"
#include "runtime/thread_pool.h"

using namespace ugrad;

namespace {

constexpr int64_t kBytes = 64ll << 20;
constexpr int64_t kN = kBytes / 4;

UOp param(int64_t slot, int64_t n) {
  return UOp::make(Op::PARAM, dtypes::float32.ptr(), {},
                   ParamArg{slot, fmt::format("data{}", slot), 0, n});
}
UOp ld(const UOp& b, const UOp& i) {
  return UOp::make(Op::LOAD, dtypes::float32, {UOp::make(Op::INDEX, b.dtype(), {b, i})});
}
UOp st(const UOp& b, const UOp& i, const UOp& v) {
  return UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, b.dtype(), {b, i}), v});
}

template <typename F>
double seconds(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Loaded {
  KernelSource ks;
  std::unique_ptr<CpuProgram> program;
  ThreadPool::RawKernel fn;
};
Loaded load(const UOp& ast) {
  Loaded l{codegen(ast, cpu_codegen_target()), nullptr, nullptr};
  auto object = llvm_compile_object(cpu_target(2), l.ks.src, l.ks.name);
  l.program = CpuJit::instance().load(object, l.ks.name);
  l.fn = l.program->function<ThreadPool::RawKernel>(l.ks.entry);
  return l;
}

}  // namespace

int main() {
  std::vector<float> a(kN, 1.f), b(kN, 2.f), c(kN, 0.f);
  float sum = 0;
  ThreadPool& pool = ThreadPool::instance();
  const double gb = 1e9;
  UOp i = UOp::range(kN, 0);
  Loaded add = load(UOp::make(Op::SINK, dtypes::void_,
                              {st(param(0, kN), i, ld(param(1, kN), i) + ld(param(2, kN), i))}));
  void* add_args[3] = {c.data(), a.data(), b.data()};
  UOp r = UOp::range(kN, 0, AxisType::Reduce);
  UOp red = UOp::make(Op::REDUCE, dtypes::float32, {ld(param(1, kN), r), r}, Op::ADD);
  Loaded sm = load(
      UOp::make(Op::SINK, dtypes::void_, {st(param(0, 1), UOp::cnst_int(dtypes::index, 0), red)}));
  void* sum_args[2] = {&sum, a.data()};

  // Rounds interleave the four measurements, so load from other processes hits them alike.
  double t_memcpy1 = 1e30, t_memcpyn = 1e30, t_add = 1e30, t_sum = 1e30;
  for (int round = 0; round < 9; ++round) {
    t_memcpy1 = std::min(t_memcpy1, seconds([&] { std::memcpy(c.data(), a.data(), kBytes); }));
    t_memcpyn = std::min(t_memcpyn, seconds([&] {
                           pool.parallel_for(kN, [&](int64_t lo, int64_t hi) {
                             std::memcpy(c.data() + lo, a.data() + lo, size_t(hi - lo) * 4);
                           });
                         }));
    t_add = std::min(t_add, seconds([&] { pool.run(add.fn, add_args, add.ks.cpu_threads); }));
    t_sum = std::min(t_sum, seconds([&] { pool.run(sm.fn, sum_args, sm.ks.cpu_threads); }));
  }
  const double bw1 = 2.0 * kBytes / t_memcpy1 / gb, bwn = 2.0 * kBytes / t_memcpyn / gb;
  const double bw_add = 3.0 * kBytes / t_add / gb;
  const double bw_sum = 1.0 * kBytes / t_sum / gb;

  fmt::print("64 MiB float32, {} cores\n", pool.num_threads());
  fmt::print("memcpy       1 thread {:7.1f} GB/s   {} threads {:7.1f} GB/s  (read+write)\n", bw1,
             pool.num_threads(), bwn);
  fmt::print("add  {:<18} {:7.1f} GB/s  {:5.0f}% of memcpy ({} threads) [{}]\n", add.ks.name,
             bw_add, 100 * bw_add / (add.ks.cpu_threads > 1 ? bwn : bw1), add.ks.cpu_threads,
             add.ks.opts_desc);
  fmt::print("sum  {:<18} {:7.1f} GB/s  {:5.0f}% of memcpy ({} threads) [{}]  sum={}\n", sm.ks.name,
             bw_sum, 100 * bw_sum / (sm.ks.cpu_threads > 1 ? bwn : bw1), sm.ks.cpu_threads,
             sm.ks.opts_desc, sum);
  return 0;
}
