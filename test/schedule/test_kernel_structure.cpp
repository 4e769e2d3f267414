// Pins which kernels the scheduler makes for realistic graphs: the kernel count, each kernel's
// buffer and REDUCE counts, and which nodes got a buffer — the same ASTs as the graph with an
// explicit contiguous() at exactly those nodes. A change in what gets materialized shows here.
#include <doctest/doctest.h>

#include <string>

#include "schedule/schedule.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// One "buffers/reduces" pair per kernel, in schedule order.
std::string fingerprint(const std::vector<UOp>& roots) {
  std::string s;
  for (const ScheduleItem& item : create_schedule(roots).items) {
    size_t reduces = 0;
    for (const UOp& u : item.ast.toposort()) reduces += u.op() == Op::REDUCE;
    if (!s.empty()) s += ' ';
    s += std::to_string(item.buffers.size()) + "/" + std::to_string(reduces);
  }
  return s;
}

// A (rows, 1) value broadcast to (rows, cols).
UOp bcast(const UOp& x, int64_t rows, int64_t cols) { return mop(Op::EXPAND, x, {rows, cols}); }

// softmax over the last axis of (rows, cols); `hint` wraps each reduce that should get a buffer.
UOp softmax(const UOp& x, int64_t rows, int64_t cols, UOp (*hint)(const UOp&)) {
  UOp e = (x - bcast(hint(reduce(x, Op::MAX, {1})), rows, cols)).alu(Op::EXP2);
  return e * bcast(hint(reduce(e, Op::ADD, {1})), rows, cols).alu(Op::RECIP);
}

UOp no_hint(const UOp& x) { return x; }

}  // namespace

TEST_CASE("structure: softmax materializes its max and its sum") {
  UOp x = input({4, 10});
  std::vector<UOp> hinted = asts({softmax(x, 4, 10, contiguous)});
  CHECK(fingerprint({softmax(x, 4, 10, no_hint)}) == "2/1 3/1 4/0");
  CHECK(asts({softmax(x, 4, 10, no_hint)}) == hinted);
}

TEST_CASE("structure: attention materializes q@k^T, the max and the sum, then fuses @v") {
  int64_t t = 4, s = 6, d = 8;
  UOp q = input({t, d}), k = input({s, d}), v = input({s, d}), mask = input({t, s});
  auto attention = [&](UOp (*hint)(const UOp&)) {
    // q @ k^T as matmul() builds it, the buffer on its sum: the scaling is recomputed by readers
    UOp q3 = mop(Op::EXPAND, mop(Op::RESHAPE, q, {t, 1, d}), {t, s, d});
    UOp k3 = mop(Op::EXPAND, mop(Op::RESHAPE, k, {1, s, d}), {t, s, d});
    UOp qk = mop(Op::RESHAPE, hint(reduce(q3 * k3, Op::ADD, {2})), {t, s});
    UOp scores = qk * full(0.125, {t, s}) + mask;
    return matmul(softmax(scores, t, s, hint), v, t, s, d);
  };
  // q@k^T (q, k), max (scores, mask), sum (+ max), out (+ sum, v)
  CHECK(fingerprint({attention(no_hint)}) == "3/1 3/1 4/1 6/1");
  CHECK(asts({attention(no_hint)}) == asts({attention(contiguous)}));
}

TEST_CASE("structure: an RMSNorm feeding a matmul materializes only its sum of squares") {
  int64_t n = 2, d = 16, m = 8;
  UOp x = input({n, d}), w = input({d}), wm = input({d, m});
  auto norm_matmul = [&](UOp (*hint)(const UOp&)) {
    UOp ss = hint(reduce(x * x, Op::ADD, {1}));  // (n, 1)
    UOp inv = (ss * full(1.0 / d, {n, 1}) + full(1e-6, {n, 1})).alu(Op::SQRT).alu(Op::RECIP);
    UOp y = x * bcast(inv, n, d) * mop(Op::EXPAND, mop(Op::RESHAPE, w, {1, d}), {n, d});
    return matmul(y, wm, n, d, m);
  };
  CHECK(fingerprint({norm_matmul(no_hint)}) == "2/1 5/1");
  CHECK(asts({norm_matmul(no_hint)}) == asts({norm_matmul(contiguous)}));
}

TEST_CASE("structure: x - mean(x) materializes the mean, broadcast into x's loops") {
  UOp x = input({3, 7});
  auto centered = [&](UOp (*hint)(const UOp&)) {
    return x - bcast(hint(reduce(x, Op::ADD, {1})) * full(1.0 / 7, {3, 1}), 3, 7);
  };
  CHECK(fingerprint({centered(no_hint)}) == "2/1 3/0");
  CHECK(asts({centered(no_hint)}) == asts({centered(contiguous)}));
}

TEST_CASE("structure: a reduce read in two index contexts of one kernel is materialized") {
  // s + s^T: each read indexes s by every loop range, but differently (i, j) and (j, i).
  int64_t n = 5, k = 3;
  UOp x = input({n, n, k});
  auto sym = [&](UOp (*hint)(const UOp&)) {
    UOp s = hint(mop(Op::RESHAPE, reduce(x, Op::ADD, {2}), {n, n}));
    return s + permute(s, {1, 0});
  };
  CHECK(fingerprint({sym(no_hint)}) == "2/1 2/0");
  CHECK(asts({sym(no_hint)}) == asts({sym(contiguous)}));
}

TEST_CASE("structure: a reduce inside another reduce (MoE expert then down projection)") {
  UOp x = input({2, 3, 8}), w = input({2, 3, 8}), down = input({2, 3, 8});
  auto moe = [&](UOp (*hint)(const UOp&)) {
    UOp expert = hint(reduce(x * w, Op::ADD, {2}));  // (2, 3, 1)
    return reduce(down * mop(Op::EXPAND, expert, {2, 3, 8}), Op::ADD, {2});
  };
  CHECK(fingerprint({moe(no_hint)}) == "3/1 3/1");
  CHECK(asts({moe(no_hint)}) == asts({moe(contiguous)}));
}

TEST_CASE("structure: a reduce given a buffer by one reader is loaded by every reader") {
  // 2*s reads the row sum s in its own shape, where it could be computed inline; x - s
  // broadcasts s, which gives s a buffer. Buffers are decided before any kernel is built, so
  // 2*s loads s too (the single-pass scheduler built 2*s first and computed s again there).
  UOp x = input({3, 7});
  UOp s = reduce(x, Op::ADD, {1});  // (3, 1)
  std::vector<UOp> roots{x - bcast(s, 3, 7), s * full(2, {3, 1})};
  CHECK(fingerprint(roots) == "2/1 3/0 2/0");
  CHECK(asts(roots) == asts({x - bcast(contiguous(s), 3, 7), contiguous(s) * full(2, {3, 1})}));
}

TEST_CASE("structure: a reduce two kernels would each compute is computed once") {
  // A projection read by two roots (as q is by its norm and its rotation): each kernel may
  // compute it inline, yet two would compute it twice; it gets a buffer both load.
  UOp x = input({4, 8}), w = input({8, 6});
  UOp proj = matmul(x, w, 4, 8, 6);  // (4, 6)
  std::vector<UOp> roots{proj * full(2, {4, 6}), proj + full(1, {4, 6})};
  CHECK(fingerprint(roots) == "3/1 2/0 2/0");
  CHECK(asts(roots) ==
        asts({contiguous(proj) * full(2, {4, 6}), contiguous(proj) + full(1, {4, 6})}));
  // One reader computes it inline, as before.
  CHECK(fingerprint({proj * full(2, {4, 6})}) == "3/1");
}
