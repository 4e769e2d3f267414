// Test helpers: build kernel ASTs by hand, compile them for the host CPU and run them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/kernel_builder.h"
#include "runtime/cpu_jit.h"
#include "runtime/thread_pool.h"

namespace ugrad::test {

// idx() and reduce() are the kernel language's (codegen/kernel_builder.h).
/// Buffer PARAM `slot` of `count` elements.
UOp buf(int64_t slot, DType dt, int64_t count);
UOp load(const UOp& b, const UOp& i);
UOp load_gated(const UOp& b, const UOp& i, const UOp& valid);
UOp store(const UOp& b, const UOp& i, const UOp& v);
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
/// The host target with AVX-512's 64-byte vector width whatever the host has: the lane and tile
/// choices the CPU heuristics were tuned for, so that tests of those choices hold on every host.
/// The code still runs on an AVX2 host (LLVM splits the wide vectors); the features that need
/// AVX-512 instructions (lane permutes, VNNI) stay as the host has them.
inline CodegenTarget avx512_width_target() {
  CodegenTarget t = cpu_codegen_target();
  t.simd_bytes = 64;
  return t;
}

/// Deterministic pseudo-random values in [lo, hi).
std::vector<float> randf(size_t n, uint32_t seed, float lo = -1, float hi = 1);

}  // namespace ugrad::test
