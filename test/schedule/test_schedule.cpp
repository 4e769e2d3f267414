#include <doctest/doctest.h>

#include "base/error.h"
#include "schedule/schedule.h"
#include "test/graph_helpers.h"

using namespace ugrad;

using namespace ugrad::test;

namespace {

size_t kernels(std::vector<UOp> roots) { return create_schedule(roots).items.size(); }

}  // namespace

TEST_CASE("elementwise chains fuse into one kernel") {
  UOp a = input({4, 8}), b = input({4, 8}), c = input({4, 8});
  CHECK(kernels({(a + b) * c}) == 1);
}

TEST_CASE("a full sum is one kernel, a permute followed by a reduce is one kernel") {
  UOp x = input({16, 32});
  CHECK(kernels({reduce(x, Op::ADD, {0, 1})}) == 1);
  CHECK(kernels({reduce(permute(x, {1, 0}), Op::ADD, {1})}) == 1);
}

TEST_CASE("relu(a@b + bias) is one kernel") {
  int64_t n = 8, k = 16, m = 4;
  UOp a = input({n, k}), b = input({k, m}), bias = input({m});
  UOp mm = matmul(a, b, n, k, m);
  UOp biased = mm + mop(Op::EXPAND, mop(Op::RESHAPE, bias, {1, m}), {n, m});
  UOp relu = biased.alu(Op::MAX, full(0, {n, m}));
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

TEST_CASE("a reduce over a matmul's outputs gets the matmul as its own kernel, not nested") {
  // sum((a @ b)^2) and (a @ b) * that sum: the matmul is materialized once; nested in the sum it
  // would run as an unvectorized kernel and be computed again by the second reader.
  int64_t n = 1, k = 64, m = 16;
  UOp a = input({n, k}), b = input({k, m});
  UOp mm = matmul(a, b, n, k, m);
  UOp total = reduce(mm * mm, Op::ADD, {1});  // (n, 1)
  Schedule s = create_schedule({mm * mop(Op::EXPAND, total, {n, m})});
  CHECK(s.items.size() == 3);
  for (const ScheduleItem& item : s.items) {
    size_t reduces = 0;
    for (const UOp& u : item.ast.toposort()) reduces += u.op() == Op::REDUCE;
    CHECK(reduces <= 1);
  }
}

TEST_CASE("realized inputs cost no kernel, identical kernels have identical ASTs") {
  UOp a = input({3, 5});
  CHECK(kernels({a}) == 0);
  UOp b = input({3, 5}), c = input({3, 5});
  Schedule s1 = create_schedule({a + b});
  Schedule s2 = create_schedule({b + c});
  CHECK(s1.items[0].ast == s2.items[0].ast);
}

// The patterns behind the .contiguous() hints llm/ dropped: the scheduler makes the same kernels
// without them (the kernels of each pair are equal ASTs).
TEST_CASE("a root that is a view of a computed value needs no contiguous()") {
  UOp a = input({4, 8}), b = input({4, 8});
  UOp permuted = permute(a + b, {1, 0});  // delta_rule_chunk's heads-first inputs
  CHECK(asts({permuted}) == asts({contiguous(permuted)}));
  UOp reshaped = mop(Op::RESHAPE, reduce(a * b, Op::ADD, {1}), {2, 2});  // delta_rule_row's rows
  CHECK(asts({reshaped, a - b}) == asts({contiguous(reshaped), contiguous(a - b)}));
}

TEST_CASE("a reduce read inside another reduce is materialized without contiguous()") {
  // MoE's expert products: (rows, k, F) sums, then summed again over F by the down projection.
  UOp x = input({2, 3, 8}), w = input({2, 3, 8}), down = input({2, 3, 8});
  UOp expert = reduce(x * w, Op::ADD, {2});  // (2, 3, 1)
  auto down_proj = [&](const UOp& e) {
    return reduce(down * mop(Op::EXPAND, e, {2, 3, 8}), Op::ADD, {2});
  };
  std::vector<UOp> hinted = asts({down_proj(contiguous(expert))});
  CHECK(hinted.size() == 2);
  CHECK(asts({down_proj(expert)}) == hinted);
}
