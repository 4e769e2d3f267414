// Test helpers: build kernel ASTs by hand, compile them for the host CPU and run them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/cpu_jit.h"
#include "runtime/thread_pool.h"

namespace ugrad::test {

inline UOp idx(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
/// Buffer PARAM `slot` of `count` elements.
UOp buf(int64_t slot, DType dt, int64_t count);
UOp load(const UOp& b, const UOp& i);
UOp load_gated(const UOp& b, const UOp& i, const UOp& valid);
UOp store(const UOp& b, const UOp& i, const UOp& v);
UOp reduce(const UOp& v, Op op, std::vector<UOp> ranges);
UOp sink(std::vector<UOp> stores);

/// A kernel compiled and loaded into the CPU JIT.
struct Kernel {
  KernelSource ks;
  std::unique_ptr<CpuProgram> program;
  ThreadPool::RawKernel fn = nullptr;
  /// Runs with the buffers (by slot) and variable values on n_cores (0: ks.cpu_threads).
  void run(std::vector<void*> bufs, std::vector<int64_t> vars = {}, int64_t n_cores = 0) const;
};
/// `target` may drop host features (the code is still for the host).
Kernel compile(const UOp& ast, const CodegenOptions& opts = {},
               const CodegenTarget& target = cpu_codegen_target());

/// Deterministic pseudo-random values in [lo, hi).
std::vector<float> randf(size_t n, uint32_t seed, float lo = -1, float hi = 1);

}  // namespace ugrad::test
