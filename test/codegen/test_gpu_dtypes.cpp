// Every dtype through the op set on gfx1100: each kernel must become a linked code object (LLVM 19
// aborts on some constructs: f64 transcendentals, i1 -> bfloat; codegen decomposes them first).
#include <doctest/doctest.h>

#include <functional>

#include "gpu_harness.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

const DType kDtypes[] = {dtypes::bool_,  dtypes::int8,    dtypes::uint8,    dtypes::int16,
                         dtypes::uint16, dtypes::int32,   dtypes::uint32,   dtypes::int64,
                         dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                         dtypes::float64};
constexpr int64_t kN = 100;  // not a multiple of the local size: guarded

// out[i] = f(a[i], b[i]) as a kernel.
UOp binary_kernel(DType in, DType out_t, const std::function<UOp(UOp, UOp)>& f) {
  UOp out = buf(0, out_t, kN), a = buf(1, in, kN), b = buf(2, in, kN);
  UOp i = UOp::range(kN, 0);
  return sink({store(out, i, f(load(a, i), load(b, i)))});
}

}  // namespace

TEST_CASE("gpu dtypes: arithmetic, compare, where, reduce for every dtype") {
  for (DType t : kDtypes) {
    CAPTURE(to_string(t));
    const bool num = !is_bool(t);
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a + b; })));
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a * b; })));
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.max(b); })));
    CHECK_NOTHROW(
        gpu_compile(binary_kernel(t, dtypes::bool_, [](UOp a, UOp b) { return a.lt(b); })));
    CHECK_NOTHROW(
        gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.ne(b).where(a, b); })));
    if (num) {
      CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a - b; })));
      CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return -a + b; })));
      if (is_float(t))
        CHECK_NOTHROW(
            gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.alu(Op::FDIV, b); })));
      else
        CHECK_NOTHROW(
            gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.idiv(b) + a % b; })));
    }
    for (Op op : {Op::ADD, Op::MAX, Op::MUL}) {
      UOp out = buf(0, t, 8), a = buf(1, t, 8 * 300);
      UOp i = UOp::range(8, 0), r = UOp::range(300, 1, AxisType::Reduce);
      CHECK_NOTHROW(gpu_compile(sink({store(out, i, reduce(load(a, i * 300 + r), op, {r}))})));
    }
  }
}

TEST_CASE("gpu dtypes: every cast pair (bool <-> bfloat16 included)") {
  for (DType from : kDtypes)
    for (DType to : kDtypes) {
      CAPTURE(to_string(from));
      CAPTURE(to_string(to));
      CHECK_NOTHROW(gpu_compile(binary_kernel(from, to, [&](UOp a, UOp) { return a.cast(to); })));
    }
}

TEST_CASE("gpu dtypes: transcendentals on every float dtype (f64 decomposed)") {
  for (DType t : {dtypes::float16, dtypes::bfloat16, dtypes::float32, dtypes::float64}) {
    CAPTURE(to_string(t));
    for (Op op : {Op::EXP2, Op::LOG2, Op::SIN, Op::SQRT, Op::RECIP, Op::TRUNC}) {
      CAPTURE(op_name(op));
      CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [&](UOp a, UOp) { return a.alu(op); })));
    }
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.alu(Op::POW, b); })));
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.alu(Op::MOD, b); })));
  }
  for (DType t : {dtypes::int32, dtypes::int64, dtypes::uint8})
    CHECK_NOTHROW(gpu_compile(binary_kernel(t, t, [](UOp a, UOp b) { return a.alu(Op::POW, b); })));
}
