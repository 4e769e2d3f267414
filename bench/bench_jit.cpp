// JIT replay overhead per kernel launch on the CPU, against eager realize of the same graph whose
// schedule and programs are already cached. Tiny kernels, so launch cost dominates.
#include <chrono>
#include <cstdio>
#include <vector>

#include "runtime/jit.h"
#include "runtime/realize.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

constexpr int kKernels = 16;

// A chain of kernels: each step materializes (CONTIGUOUS) a small elementwise result.
std::vector<UOp> chain(const std::vector<UOp>& in) {
  UOp x = in[0];
  for (int i = 0; i < kKernels; ++i)
    x = UOp::make(Op::CONTIGUOUS, x.dtype(), {x * full(1.0001, {64}) + full(0.5, {64})});
  return {x};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  UOp x = input({64});
  std::vector<float> zeros(64, 0.0f);
  copy_in(realized_buffer(x), std::as_bytes(std::span(zeros)));
  GraphJit jit(chain, "bench");
  jit({x});
  jit({x});  // captured
  const int reps = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) jit({x});
  double replay = seconds_since(t0) / reps / kKernels;

  for (int r = 0; r < 3; ++r) realize(chain({x}));  // warm the schedule and program caches
  const int eager_reps = 200;
  t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < eager_reps; ++r) realize(chain({x}));
  double eager = seconds_since(t0) / eager_reps / kKernels;

  std::printf("JIT replay: %.2f us per kernel launch (%d kernels per call)\n", replay * 1e6,
              kKernels);
  std::printf("eager realize (cached schedule and programs): %.2f us per kernel\n", eager * 1e6);
  std::printf("eager / replay: %.1fx\n", eager / replay);
  return 0;
}
