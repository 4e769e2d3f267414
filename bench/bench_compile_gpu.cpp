// Compile latency per kernel for gfx1100, end to end: ugrad codegen (kernel AST -> LLVM IR, with
// the GPU passes: dims, group reduce, tensor cores, dot4, decompositions) + LLVM (parse, O2,
// AMDGPU codegen) + in-process lld link + metadata parse. Kernels: the op coverage matrix (every
// dtype through elementwise ops, casts, reductions; float transcendentals incl. f64) plus a
// group reduce, a f16 WMMA matmul and an int8 dot4 matvec. Baseline in the same run: the
// fastest kernel (a 1-op elementwise), so ratios show what each kind of kernel costs.
// The first kernel (cold caches, target init) is excluded. Each kernel: the fastest of 3 runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/kernel_builder.h"
#include "runtime/amd/amd_compile.h"
#include "runtime/llvm_target.h"

using namespace ugrad;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Case {
  std::string group;
  UOp ast;
};

const DType kDtypes[] = {dtypes::bool_,  dtypes::int8,    dtypes::uint8,    dtypes::int16,
                         dtypes::uint16, dtypes::int32,   dtypes::uint32,   dtypes::int64,
                         dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                         dtypes::float64};

UOp binary(DType in, DType out_t, const std::function<UOp(UOp, UOp)>& f) {
  KernelBuilder kb;
  View out = kb.buffer(out_t, {4099}), a = kb.buffer(in, {4099}), b = kb.buffer(in, {4099});
  UOp i = kb.loop(4099);
  kb.store(out.at(i), f(a(i), b(i)));
  return kb.build();
}

UOp row_reduce(DType t, Op op, int64_t rows, int64_t K) {
  KernelBuilder kb;
  View out = kb.buffer(t, {rows}), a = kb.buffer(t, {rows * K});
  UOp i = kb.loop(rows), r = kb.reduce_range(K);
  kb.store(out.at(i), reduce(a(i * K + r), op, {r}));
  return kb.build();
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : kDtypes) {
    out.push_back({"elementwise", binary(t, t, [](UOp a, UOp b) { return a + b; })});
    out.push_back({"elementwise", binary(t, t, [](UOp a, UOp b) { return a * b.max(a); })});
    out.push_back({"elementwise", binary(t, dtypes::bool_, [](UOp a, UOp b) { return a.lt(b); })});
    out.push_back({"reduce", row_reduce(t, Op::ADD, 512, 64)});
    for (DType to : {dtypes::float32, dtypes::int32, dtypes::bfloat16, dtypes::bool_})
      out.push_back({"cast", binary(t, to, [&](UOp a, UOp) { return a.cast(to); })});
  }
  for (DType t : {dtypes::float16, dtypes::float32, dtypes::float64})
    for (Op op : {Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT})
      out.push_back({t == dtypes::float64 ? "transcendental f64" : "transcendental",
                     binary(t, t, [&](UOp a, UOp) { return a.alu(op); })});
  out.push_back({"group reduce", row_reduce(dtypes::float32, Op::ADD, 4, 65536)});
  out.push_back({"group reduce", row_reduce(dtypes::float32, Op::MAX, 1, 1 << 20)});
  {
    KernelBuilder kb;
    const int64_t M = 256, N = 256, K = 256;
    View c = kb.buffer(dtypes::float32, {M * N}), a = kb.buffer(dtypes::float16, {M * K}),
         b = kb.buffer(dtypes::float16, {K * N});
    UOp i = kb.loop(M), j = kb.loop(N), k = kb.reduce_range(K);
    UOp prod = a(i * K + k).cast(dtypes::float32) * b(k * N + j).cast(dtypes::float32);
    kb.store(c.at(i * N + j), reduce(prod, Op::ADD, {k}));
    out.push_back({"wmma matmul", kb.build()});
  }
  {
    KernelBuilder kb;
    const int64_t rows = 4096, K = 4096;
    View o = kb.buffer(dtypes::int32, {rows}), w = kb.buffer(dtypes::int8, {rows * K}),
         x = kb.buffer(dtypes::int8, {K});
    UOp i = kb.loop(rows), k = kb.reduce_range(K);
    UOp prod = w(i * K + k).cast(dtypes::int32) * x(k).cast(dtypes::int32);
    kb.store(o.at(i), reduce(prod, Op::ADD, {k}));
    out.push_back({"dot4 matvec", kb.build()});
  }
  return out;
}

struct Sample {
  double codegen = 1e30, llvm = 1e30, link = 1e30, total = 1e30;
};

Sample measure(const UOp& ast, const CodegenTarget& target, const LlvmTarget& llvm) {
  Sample best;
  for (int run = 0; run < 3; ++run) {
    auto t0 = Clock::now();
    KernelSource ks = codegen(ast, target);
    const double cg = ms_since(t0);
    AmdCompileTimes times;
    amd_compile(llvm, ks.src, ks.name, &times);
    const double total = ms_since(t0);
    if (total < best.total)
      best = {cg, times.llvm.parse_ms + times.llvm.optimize_ms + times.llvm.codegen_ms,
              times.link_ms + times.parse_ms, total};
  }
  return best;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main() {
  const CodegenTarget target = amd_codegen_target("gfx1100");
  const LlvmTarget llvm = amdgpu_target("gfx1100");
  std::vector<Case> all = cases();
  auto t0 = Clock::now();
  {
    KernelSource ks = codegen(all[0].ast, target);
    amd_compile(llvm, ks.src, ks.name);
  }
  std::printf("first kernel (cold): %.2f ms\n", ms_since(t0));
  std::map<std::string, std::vector<Sample>> by_group;
  std::vector<Sample> every;
  for (const Case& c : all) {
    Sample s = measure(c.ast, target, llvm);
    by_group[c.group].push_back(s);
    every.push_back(s);
  }
  double baseline = 1e30;
  for (const Sample& s : every) baseline = std::min(baseline, s.total);
  std::printf(
      "%zu kernels for gfx1100, ms per kernel (fastest of 3), baseline = fastest kernel "
      "%.2f ms\n",
      every.size(), baseline);
  std::printf("%-20s %4s %9s %9s %9s %9s %8s\n", "group", "n", "codegen", "llvm", "link", "total",
              "x base");
  auto row = [&](const std::string& name, const std::vector<Sample>& v) {
    Sample m{0, 0, 0, 0};
    for (const Sample& s : v)
      m.codegen += s.codegen, m.llvm += s.llvm, m.link += s.link, m.total += s.total;
    const double n = double(v.size());
    std::printf("%-20s %4zu %9.2f %9.2f %9.2f %9.2f %8.1f\n", name.c_str(), v.size(), m.codegen / n,
                m.llvm / n, m.link / n, m.total / n, m.total / n / baseline);
  };
  for (const auto& [g, v] : by_group) row(g, v);
  row("all (mean)", every);
  std::vector<double> totals;
  for (const Sample& s : every) totals.push_back(s.total);
  std::printf("total ms: median %.2f  p90 %.2f  max %.2f\n", percentile(totals, 0.5),
              percentile(totals, 0.9), percentile(totals, 1.0));
  return 0;
}
