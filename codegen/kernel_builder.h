// A small builder for hand-written kernels (llm/kernels): the kernel AST of codegen.h, with the
// GPU pieces the optimizer would otherwise produce: explicit GLOBAL/LOCAL ranges (workgroup id and
// workitem id), LDS buffers with barriers, WMMA 16x16x16 tiles and int8 dot4 ops. The result of
// build() goes through codegen() like any kernel (pass CodegenOptions{.noopt = 1} to keep the
// heuristic away). It also compiles for the CPU, LDS and barriers included (each workgroup a
// loop iteration, each phase between barriers a loop over the workitems, a WMMA tile as each
// lane's products: lower/cpu_workgroups.h).
//
//   KernelBuilder kb;
//   UOp out = kb.buffer(dtypes::float32, n), in = kb.buffer(dtypes::float32, n);
//   UOp g = kb.global(n / 256), l = kb.local(256);
//   UOp i = g * 256 + l;
//   kb.store(out, i, kb.load(in, i) * 2.0f);
//   UOp ast = kb.build();
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

/// The name of a hand-written kernel AST (KernelBuilder::build(name)); empty for any other AST.
std::string hand_written_name(const UOp& ast);

class KernelBuilder {
 public:
  /// Buffer parameter slot 0, 1, ... (outputs first, by convention) of `count` elements.
  UOp buffer(DType dtype, int64_t count);
  /// A symbolic variable (kernel scalar argument) in [lo, hi].
  UOp var(const std::string& name, int64_t lo, int64_t hi);

  /// Ranges; each gets the next axis id. GPU: global = workgroup id, local = workitem id (the
  /// n-th local range is dim n; the n-th global range is dim n, paired with it).
  UOp global(int64_t extent);
  UOp global(const UOp& extent);
  UOp local(int64_t extent);
  UOp loop(int64_t extent);
  UOp loop(const UOp& extent);
  UOp reduce_range(int64_t extent);
  UOp reduce_range(const UOp& extent);

  UOp load(const UOp& buf, const UOp& index) const;
  /// A load that yields 0 where `valid` is false (and touches no memory there).
  UOp load(const UOp& buf, const UOp& index, const UOp& valid) const;
  /// Adds a STORE to a buffer parameter (a kernel output); `gate` (optional) guards it.
  void store(const UOp& buf, const UOp& index, const UOp& value, const UOp& gate = UOp());
  /// REDUCE(value, ranges) with op ADD, MUL or MAX.
  static UOp reduce(const UOp& value, Op op, const std::vector<UOp>& ranges);

  /// A workgroup-shared (LDS) array of `count` elements.
  UOp lds(DType dtype, int64_t count);
  /// The STORE of `value` to lds[index] (not a kernel output: pass it to barrier()); `gate`
  /// (optional) guards it. `lds` may be an array after a barrier: a later write phase.
  static UOp lds_store(const UOp& lds, const UOp& index, const UOp& value, const UOp& gate = UOp());
  /// The LDS array after a workgroup barrier that follows `stores`: load from the result.
  static UOp barrier(const UOp& lds, const std::vector<UOp>& stores);
  /// `value` after a workgroup barrier that follows it: every workitem has done the LDS reads
  /// behind it before any goes on. In a loop that writes a tile per iteration, pass what the
  /// iteration computes from the tile through it, so that the next iteration's writes wait.
  static UOp barrier_after(const UOp& value);

  /// Explicit vectors (fragments) and their elements.
  static UOp vectorize(const std::vector<UOp>& elements);
  static UOp gep(const UOp& vec, int64_t i);
  /// D = A*B + C on one 16x16x16 tile per wave32 (see tensor_cores.h for the fragment layout):
  /// a, b <16 x f16|bf16>, c <8 x f32>.
  static UOp wmma(const UOp& a, const UOp& b, const UOp& c);
  /// DOT4 (uop/ops.h): acc + sum_j a[j]*b[j] over the 4 bytes j of the words a and b, each side's
  /// bytes int8 or uint8 as `signs` says. a, b and acc are int32 (or all uint32) scalars.
  static UOp dot4(const UOp& a, const UOp& b, const UOp& acc, Dot4Arg signs);

  /// The kernel AST: SINK of the stores, in order. A `name` (letters, digits, '_') marks it
  /// hand-written: codegen applies no optimization to it and names it so in DEBUG output.
  UOp build(const std::string& name = "") const;

 private:
  UOp range(const UOp& extent, AxisType type);
  int64_t next_slot_ = 0, next_axis_ = 0;
  std::set<std::pair<Scalar, int64_t>> lds_sizes_;
  std::vector<UOp> stores_;
};

}  // namespace ugrad
