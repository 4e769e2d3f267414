// Kernel optimizations as data: a list of Opt{type, axis, amount} chosen by a heuristic (or given),
// applied to the kernel AST by one function.
//   UPCAST(axis, n)  split output axis r into r'*n + u; u is expanded into n copies (vector lanes)
//   UNROLL(axis, n)  split reduce axis r into r'*n + u; the n copies are summed inside the loop,
//                    or u stays as the lanes of a vector accumulator when the loads are contiguous
//                    along it (expand.h)
//   SPLIT(axis, n)   split output axis r into r'*n + l; l is a new loop nested inside the others
//   THREAD(axis, n)  the output axis is split across n cores by core_id
//   PACK(axis, 1)    a reduce operand independent of `axis` is copied into a contiguous scratch
//                    buffer outside the `axis` loop (see pack.h)
// UPCAST and UNROLL of an axis of symbolic extent n loop ceil(n / amount) times; every load and
// store at n or past it is masked off and a reduce adds its identity there.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

enum class OptType : uint8_t { Upcast, Unroll, Thread, Pack, Split };

/// One optimization: `axis` is a RANGE axis id of the kernel AST (after earlier opts).
struct Opt {
  OptType type;
  int64_t axis;
  int64_t amount;
  friend bool operator==(const Opt&, const Opt&) = default;
};

/// "UPCAST(1,4) UNROLL(2,4) THREAD(0,2)".
std::string to_string(const std::vector<Opt>& opts);

/// Applies `opts` in order to the kernel AST; an Error names an opt that does not fit (unknown
/// axis, amount not dividing a constant range, a SPLIT of a symbolic one, wrong axis kind). Split
/// axes get fresh axis ids.
UOp apply_opts(const UOp& ast, const std::vector<Opt>& opts);

/// Cores a CPU kernel may use: `max_threads` if positive, else the THREADS knob, else the host's.
int64_t cpu_cores(int64_t max_threads);

/// The heuristic's choice for `ast` on `target`: register tiling for GEMM-shaped reduces, upcasts
/// of contiguous output axes, vector lanes along a contiguous reduce axis (lane_reduce.h; masked
/// at the end of a symbolic one), and threads when the kernel is big enough.
/// `max_threads` bounds the THREAD amount (0: the THREADS knob, else the host's core count).
std::vector<Opt> heuristic_opts(const UOp& ast, const CodegenTarget& target, int64_t max_threads);

/// The output loop ranges (outside any REDUCE) of every store, and the reduce ranges, by axis id.
std::vector<UOp> kernel_ranges(const UOp& ast);

}  // namespace ugrad
