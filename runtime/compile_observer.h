// Who hears of compiles: one process-wide callback that realize() calls after each kernel it had
// to generate and compile (not one found already compiled), e.g. for a progress display during a
// model's warm-up.
#pragma once
#include <cstdint>
#include <functional>

namespace ugrad {

struct CompileEvent {
  int64_t kernel = 0;    // 1-based position of the kernel in the schedule being realized
  int64_t kernels = 0;   // kernels in that schedule (compiled or found)
  int64_t compiled = 0;  // kernels compiled by this process so far
  double seconds = 0;    // compile time of this process so far
};
using CompileObserver = std::function<void(const CompileEvent&)>;

/// Installs the observer (empty: none) and returns the previous one. Not thread-safe against
/// compiles running at the same time: set it before.
CompileObserver set_compile_observer(CompileObserver observer);

}  // namespace ugrad
