// Kernel AST -> LLVM IR text for one target.
//
// The kernel AST (produced by the scheduler) is the contract:
// - SINK(STORE(INDEX(PARAM buf, idx), value), ...): one or more stores. Loops are implicit: every
//   RANGE a store's index or value depends on (outside REDUCE) is an output loop around it.
// - PARAM with dtype elem.ptr() and ParamArg{slot=i, name="data{i}", lo=0, hi=element count}:
//   buffer i (slots 0..n-1, outputs first). PARAM with dtype index and ParamArg{slot=-1, name, lo,
//   hi}: a symbolic variable (an int64 at run time, lo <= v <= hi).
// - RANGE(end, RangeArg{axis, AxisType::Loop | AxisType::Reduce}), dtype index; `end` is an index
//   expression (a CONST, or symbolic over variables). Axis ids are unique within the kernel.
// - LOAD(INDEX(PARAM buf, idx)), or LOAD(INDEX(PARAM buf, idx, valid)) with a bool `valid`: the
// load
//   yields 0 when !valid and does not touch memory then (padding).
// - REDUCE(value, r_a, r_b, ..., arg = Op::ADD | Op::MUL | Op::MAX) over Reduce ranges; the result
//   dtype is value's dtype (accumulated in that dtype).
// - Values: the ALU ops of uop/ops.h, CAST, BITCAST, CONST; variables may be used as values
//   (through a CAST). Sources of an ALU op have equal dtypes.
//
// CPU calling convention: `void entry(void** args, int64_t core_id, int64_t n_cores)`; args[i] is
// buffer slot i, args[n_bufs + j] holds variable j (in `vars` order) as (void*)(intptr_t)value.
// The kernel runs its share of the outermost output loop for core_id of n_cores, so any n_cores
// >= 1 gives the same result; `cpu_threads` is how many cores it is worth.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/opt/gpu_opts.h"
#include "codegen/opt/opt.h"
#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// One buffer parameter of a kernel.
struct KernelBuffer {
  DType dtype;    // element dtype
  int64_t count;  // element count (ParamArg::hi)
  bool written;   // the kernel stores to it
};

/// A compiled-ready kernel: LLVM IR text and what a runtime needs to launch it.
struct KernelSource {
  std::string name;                   // tinygrad style, unique per process: E_4_16, r_16_32
  std::string entry;                  // symbol of the entry function
  std::string src;                    // LLVM IR module
  std::vector<KernelBuffer> buffers;  // by slot
  std::vector<UOp> vars;              // variable PARAMs in argument order (sorted by name)
  std::vector<Opt> opts;              // optimizations applied
  std::vector<GpuOpt> gpu_opts;       // GPU optimizations applied (group reduce, tensor cores)
  std::string opts_desc;              // the same as text, for DEBUG=3
  int64_t cpu_threads = 1;            // cores the kernel wants (CPU)
  std::vector<UOp> global_size;       // GPU: launch grid in workgroups (index UOps over vars)
  std::vector<UOp> local_size;        // GPU: workgroup size
  UOp flops, bytes;                   // work and memory estimates over `vars` (codegen/cost.h)
};

struct CodegenOptions {
  /// -1: read the NOOPT knob; 0: optimize; 1: no optimizations.
  int noopt = -1;
  /// Optimizations to apply instead of the heuristic's choice (when set).
  std::optional<std::vector<Opt>> opts = std::nullopt;
  /// GPU optimizations to apply instead of the GPU heuristic's choice (when set).
  std::optional<std::vector<GpuOpt>> gpu_opts = std::nullopt;
  /// Upper bound on cpu_threads (0: the THREADS knob, else the host core count).
  int64_t max_threads = 0;
};

/// The names of the passes codegen runs for `target`, in order (what DEBUG=3 prints; PRINT_AFTER
/// takes one of them).
std::vector<std::string> codegen_pass_names(const CodegenTarget& target);

/// Lowers the kernel AST `ast` (a SINK of STOREs, see above) to LLVM IR for `target`.
KernelSource codegen(const UOp& ast, const CodegenTarget& target, const CodegenOptions& opts = {});

/// What a CPU KernelSource keeps that only codegen makes, for a cache of them across processes
/// (runtime/kernel_memo.h); the rest is read from the AST again.
struct StoredKernel {
  std::string name, entry, src;
  std::vector<Opt> opts;
  int64_t cpu_threads = 1;
  friend bool operator==(const StoredKernel&, const StoredKernel&) = default;
};
StoredKernel stored_kernel(const KernelSource& ks);
/// The KernelSource codegen made for `ast` in an earlier process (a CPU target), from what it
/// stored: buffers and variables read from the AST again, the name made unique in this process;
/// no cost estimates (DEBUG=2 needs codegen's).
KernelSource restore_kernel(const UOp& ast, const StoredKernel& stored);

}  // namespace ugrad
