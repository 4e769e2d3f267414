// The kernel language of the hand-written kernels (llm/kernels): the kernel AST of codegen.h with
// the GPU pieces the optimizer would otherwise produce (explicit GLOBAL/LOCAL ranges: workgroup
// and workitem ids; LDS arrays with barriers; WMMA 16x16x16 tiles; int8 dot4), over shaped views
// of memory. The result of build() goes through codegen() like any kernel (a named kernel gets no
// optimization). It also compiles for the CPU, LDS and barriers included (each workgroup a loop
// iteration, each phase between barriers a loop over the workitems, a WMMA tile as each lane's
// products: lower/cpu_workgroups.h).
//
//   KernelBuilder kb;
//   View out = kb.buffer(dtypes::float32, {rows, n}), in = kb.buffer(dtypes::float32, {rows, n});
//   UOp row = kb.global(rows), i = kb.local(n);
//   kb.store(out.at(row, i), in(row, i) * f32(2.0));
//   UOp ast = kb.build("twice");
//
// A view's element (i0, ..., ik) over dims of extents e0..ek lies at ((i0 * e1 + i1) * e2 + ...)
// + ik, the row-major index written as the kernels always wrote it; view[i] is the view of the
// elements whose first index is i.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/opt/tensor_cores.h"
#include "uop/uop.h"

namespace ugrad {

/// The lanes of a wave the hand-written kernels are written for (RDNA3's wave32).
inline constexpr int64_t kWave = 32;

/// The name of a hand-written kernel AST (KernelBuilder::build(name)); empty for any other AST.
std::string hand_written_name(const UOp& ast);

// Constants.
UOp idx(int64_t v);
UOp f32(double v);
UOp i32(int64_t v);
UOp u32(int64_t v);

/// An index argument: a number or an index expression.
struct Ix {
  UOp u;
  Ix(int64_t v) : u(idx(v)) {}    // NOLINT(google-explicit-constructor)
  Ix(int v) : u(idx(v)) {}        // NOLINT(google-explicit-constructor)
  Ix(UOp v) : u(std::move(v)) {}  // NOLINT(google-explicit-constructor)
};

/// One element of a view: the memory (a buffer parameter or LDS array) and its flat index.
struct Elem {
  UOp mem, index;
};

/// A shaped, row-major view of a buffer parameter or an LDS array.
class View {
 public:
  View() = default;
  View(UOp mem, std::vector<int64_t> dims, UOp prefix = UOp());
  const UOp& mem() const { return mem_; }
  const std::vector<int64_t>& dims() const { return dims_; }

  /// The element at a full index (one per dim).
  template <class... I>
  Elem at(const I&... i) const {
    return at_list({Ix(i)...});
  }
  /// Its value (a load).
  template <class... I>
  UOp operator()(const I&... i) const {
    return load(at(i...));
  }
  /// The view of the elements whose first index is `i`.
  View operator[](const Ix& i) const;
  /// The same elements as other dims (their product unchanged).
  View reshape(std::vector<int64_t> dims) const;
  /// The view of the same memory after `b` (barrier(): the LDS array after its writes).
  View after(const UOp& b) const { return View(b, dims_, prefix_); }

 private:
  Elem at_list(const std::vector<Ix>& i) const;
  UOp mem_, prefix_;
  std::vector<int64_t> dims_;
};

/// A load of `e`; with `valid`, it yields 0 where `valid` is false (and touches no memory there).
UOp load(const Elem& e, const UOp& valid = UOp());
/// The STORE of `value` to an LDS element (not a kernel output: pass it to barrier()); `gate`
/// (optional) guards it. The array may be one after a barrier: a later write phase.
UOp lds_store(const Elem& e, const UOp& value, const UOp& gate = UOp());
/// The LDS view after a workgroup barrier that follows `stores`: load from the result.
View barrier(const View& lds, const std::vector<UOp>& stores);
/// `value` after a workgroup barrier that follows it: every workitem has done the LDS reads
/// behind it before any goes on. In a loop that writes a tile per iteration, pass what the
/// iteration computes from the tile through it, so that the next iteration's writes wait.
UOp barrier_after(const UOp& value);

/// The items c = tid, tid + threads, ... below `count` that `threads` workitems `tid` share
/// (unrolled): body(c, gate), the gate c < count where the last round is partial (else none).
void for_each_item(const UOp& tid, int64_t threads, int64_t count,
                   const std::function<void(const UOp& c, const UOp& gate)>& body);
/// `count` elements value(c) copied into a new flat LDS array by `threads` workitems `tid`
/// (stores gated as for_each_item's), as the array to read after the barrier.
View copy_to_lds(class KernelBuilder& kb, DType dtype, int64_t count, const UOp& tid,
                 int64_t threads, const std::function<UOp(const UOp& c, const UOp& gate)>& value);

/// REDUCE(value, ranges) with op ADD, MUL or MAX.
UOp reduce(const UOp& value, Op op, const std::vector<UOp>& ranges);
UOp sum_over(const UOp& value, const std::vector<UOp>& ranges);
UOp max_over(const UOp& value, const std::vector<UOp>& ranges);
/// The sum and the max of values, in order: ((v0 + v1) + v2) ...
UOp sum(const std::vector<UOp>& values);
UOp maximum(const std::vector<UOp>& values);
/// The n values f(0), ..., f(n - 1).
std::vector<UOp> generate(int64_t n, const std::function<UOp(int64_t)>& f);
/// min(i, last) for an index expression (i itself where it never exceeds last): a lane past the
/// end of a ragged shape reads the last element again (its share is dropped), with no gate.
UOp last_at_most(const UOp& i, int64_t last);

/// Explicit vectors (fragments) and their elements.
UOp vectorize(const std::vector<UOp>& elements);
UOp gep(const UOp& vec, int64_t i);
UOp bitcast(const UOp& v, DType to);
/// DOT4 (uop/ops.h): acc + sum_j a[j]*b[j] over the 4 bytes j of the words a and b, each side's
/// bytes int8 or uint8 as `signs` says. a, b and acc are int32 (or all uint32) scalars.
UOp dot4(const UOp& a, const UOp& b, const UOp& acc, Dot4Arg signs);

/// A gfx11 WMMA 16x16x16 tile (tensor_cores.h) as lane `lane` of its wave32 holds it:
///   A fragment  16 halves: row col() of A, k = 0..15
///   B fragment  16 halves: column col() of B, k = 0..15
///   C/D         kAcc floats: element i is row row(i), column col()
struct WmmaLane {
  static constexpr int64_t kAcc = 8;
  UOp lane;
  UOp col() const { return lane % kWmmaTile; }
  UOp half() const { return lane.idiv(kWmmaTile); }
  UOp row(int64_t i) const { return half() + 2 * i; }
  /// A or B fragment: the 16 values f(k), as `dtype` (float16 or bfloat16) if not already.
  static UOp fragment(const std::function<UOp(int64_t k)>& f, DType dtype = dtypes::float16);
  /// The zero accumulator.
  static UOp zero();
};
// wmma(a, b, c) (tensor_cores.h): D = A*B + C on one tile in WmmaLane's layout.

class KernelBuilder {
 public:
  /// Buffer parameter slot 0, 1, ... (outputs first, by convention), as a view of `dims`.
  View buffer(DType dtype, std::vector<int64_t> dims);
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

  /// Adds a STORE to a buffer parameter (a kernel output); `gate` (optional) guards it.
  void store(const Elem& e, const UOp& value, const UOp& gate = UOp());

  /// A workgroup-shared (LDS) array of `dims`.
  View lds(DType dtype, std::vector<int64_t> dims);

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
