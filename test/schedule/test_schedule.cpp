#include <doctest/doctest.h>

#include "schedule/schedule.h"
#include "uop/error.h"

using namespace ugrad;

namespace {

UOp input(std::vector<int64_t> dims, DType dt = dtypes::float32) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return buffer_view(buffer_node("CPU", dt, n), make_shape(dims));
}
UOp mop(Op op, const UOp& x, const std::vector<int64_t>& dims) {
  std::vector<UOp> src{x};
  for (int64_t d : dims) src.push_back(dim(d));
  return UOp::make(op, x.dtype(), src);
}
UOp permute(const UOp& x, std::vector<int64_t> order) {
  return UOp::make(Op::PERMUTE, x.dtype(), {x}, order);
}
UOp reduce(const UOp& x, Op op, std::vector<int64_t> axes) {
  return UOp::make(Op::REDUCE_AXIS, x.dtype(), {x}, ReduceArg{op, axes});
}
UOp broadcast_const(double v, std::vector<int64_t> dims) {
  std::vector<int64_t> ones(dims.size(), 1);
  return mop(Op::EXPAND, mop(Op::RESHAPE, UOp::cnst(dtypes::float32, v), ones), dims);
}
size_t kernels(std::vector<UOp> roots) { return create_schedule(roots).items.size(); }

}  // namespace

TEST_CASE("elementwise chains fuse into one kernel") {
  UOp a = input({4, 8}), b = input({4, 8}), c = input({4, 8});
  CHECK(kernels({(a + b) * c}) == 1);
}

TEST_CASE("a full sum is one kernel; a permute followed by a reduce is one kernel") {
  UOp x = input({16, 32});
  CHECK(kernels({reduce(x, Op::ADD, {0, 1})}) == 1);
  CHECK(kernels({reduce(permute(x, {1, 0}), Op::ADD, {1})}) == 1);
}

TEST_CASE("relu(a@b + bias) is one kernel") {
  int64_t n = 8, k = 16, m = 4;
  UOp a = input({n, k}), b = input({k, m}), bias = input({m});
  UOp a3 = mop(Op::EXPAND, mop(Op::RESHAPE, a, {n, 1, k}), {n, m, k});
  UOp b3 = mop(Op::EXPAND, mop(Op::RESHAPE, permute(b, {1, 0}), {1, m, k}), {n, m, k});
  UOp mm = mop(Op::RESHAPE, reduce(a3 * b3, Op::ADD, {2}), {n, m});
  UOp biased = mm + mop(Op::EXPAND, mop(Op::RESHAPE, bias, {1, m}), {n, m});
  UOp relu = biased.alu(Op::MAX, broadcast_const(0, {n, m}));
  Schedule s = create_schedule({relu});
  CHECK(s.items.size() == 1);
  CHECK(s.items[0].buffers.size() == 4);
}

TEST_CASE("softmax over the last axis is at most 3 kernels") {
  UOp x = input({4, 10});
  UOp mx = mop(Op::EXPAND, reduce(x, Op::MAX, {1}), {4, 10});
  UOp e = (x - mx).alu(Op::EXP2);
  UOp sm = mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {4, 10});
  UOp out = e * sm.alu(Op::RECIP);
  CHECK(kernels({out}) <= 3);
}

TEST_CASE("realized inputs cost no kernel; identical kernels have identical ASTs") {
  UOp a = input({3, 5});
  CHECK(kernels({a}) == 0);
  UOp b = input({3, 5}), c = input({3, 5});
  Schedule s1 = create_schedule({a + b});
  Schedule s2 = create_schedule({b + c});
  CHECK(s1.items[0].ast == s2.items[0].ast);
}
