// Gathers as direct loads (codegen/lower/gather_load.h): gather, index_select and embedding through
// the Tensor API against naive host loops, hand-built one-hot sums against the same loops, and the
// structure of the rewritten kernels (no loop over the gathered axis).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/lower/gather_load.h"
#include "kernel_harness.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// Table values of every dtype under test, exact in half.
std::vector<double> table_values(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7) % 23) - 11 + 0.5 * (i % 2);
  return v;
}

Tensor make_table(const std::vector<double>& v, const std::vector<int64_t>& shape, DType dt) {
  std::vector<double> w = v;
  if (is_int(dt))
    for (double& x : w) x = static_cast<double>(static_cast<int64_t>(x));
  return Tensor::from_doubles(w, shape, dt);
}

Tensor make_ids(const std::vector<int64_t>& ids, const std::vector<int64_t>& shape, DType dt) {
  return Tensor::from_ints(ids, shape, dt);
}

std::vector<double> as_doubles(const Tensor& t) {
  return t.cast(dtypes::float64).to_vector<double>();
}

double at_or_zero(const std::vector<double>& v, int64_t n, int64_t i, int64_t stride, int64_t off,
                  DType dt) {
  if (i < 0 || i >= n) return 0;
  double x = v[i * stride + off];
  return is_int(dt) ? static_cast<double>(static_cast<int64_t>(x)) : x;
}

const DType kTableTypes[] = {dtypes::float32, dtypes::float16, dtypes::int32};
const DType kIndexTypes[] = {dtypes::int32, dtypes::int64};

// The schedule's one kernel for `t`, rewritten and compiled for the host.
UOp only_kernel(const Tensor& t) {
  Schedule s = create_schedule({t.node()});
  REQUIRE(s.items.size() == 1);
  return s.items[0].ast;
}

bool has_range_of(const UOp& ast, int64_t extent) {
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::RANGE && u.src(0).is_const() && u.src(0).const_int() == extent) return true;
  return false;
}

bool has_reduce(const UOp& ast) {
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::REDUCE) return true;
  return false;
}

}  // namespace

TEST_CASE("embedding: rows by id, out-of-range ids give 0, every table and index dtype") {
  const int64_t V = 37, D = 8;
  const std::vector<int64_t> ids = {3, 0, 36, 37, -1, 12, 1000, 5};
  std::vector<double> tv = table_values(V * D);
  for (DType tdt : kTableTypes)
    for (DType idt : kIndexTypes) {
      CAPTURE(to_string(tdt));
      CAPTURE(to_string(idt));
      Tensor out = make_table(tv, {V, D}, tdt).embedding(make_ids(ids, {2, 4}, idt));
      REQUIRE(out.dims() == std::vector<int64_t>{2, 4, D});
      CHECK(out.dtype() == tdt);
      std::vector<double> got = as_doubles(out);
      for (size_t t = 0; t < ids.size(); ++t)
        for (int64_t d = 0; d < D; ++d)
          CHECK(got[t * D + d] == at_or_zero(tv, V, ids[t], D, d, tdt));
    }
}

TEST_CASE("gather along each axis against a naive loop") {
  const int64_t A = 5, B = 6;
  std::vector<double> tv = table_values(A * B);
  for (DType tdt : kTableTypes)
    for (DType idt : kIndexTypes)
      for (int64_t axis : {0, 1}) {
        CAPTURE(to_string(tdt));
        CAPTURE(to_string(idt));
        CAPTURE(axis);
        // index (4, 3): values in [-2, 8) so some fall outside either axis
        std::vector<int64_t> iv(12);
        for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<int64_t>((i * 5) % 10) - 2;
        Tensor out = make_table(tv, {A, B}, tdt).gather(axis, make_ids(iv, {4, 3}, idt));
        std::vector<double> got = as_doubles(out);
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < 3; ++j) {
            int64_t k = iv[i * 3 + j];
            double want = axis == 0 ? at_or_zero(tv, A, k, B, j, tdt)
                                    : (k < 0 || k >= B ? 0 : at_or_zero(tv, A, i, B, k, tdt));
            CHECK(got[i * 3 + j] == want);
          }
      }
}

TEST_CASE("index_select on the middle axis of a 3-d tensor") {
  const int64_t A = 3, E = 7, C = 4;
  std::vector<double> tv = table_values(A * E * C);
  const std::vector<int64_t> sel = {6, 0, 6, 2, 7, -3};
  for (DType tdt : kTableTypes)
    for (DType idt : kIndexTypes) {
      CAPTURE(to_string(tdt));
      CAPTURE(to_string(idt));
      Tensor out = make_table(tv, {A, E, C}, tdt).index_select(1, make_ids(sel, {6}, idt));
      REQUIRE(out.dims() == std::vector<int64_t>{A, 6, C});
      std::vector<double> got = as_doubles(out);
      for (int64_t a = 0; a < A; ++a)
        for (int64_t s = 0; s < 6; ++s)
          for (int64_t c = 0; c < C; ++c) {
            int64_t e = sel[s];
            double want = e < 0 || e >= E ? 0 : at_or_zero(tv, A * E, a * E + e, C, c, tdt);
            CHECK(got[(a * 6 + s) * C + c] == want);
          }
    }
}

TEST_CASE("embedding kernel: no loop over the vocabulary, no reduce") {
  const int64_t V = 37, D = 8, N = 5;
  const std::vector<double> tv = table_values(V * D);
  Tensor table = Tensor::from_doubles(tv, {V, D}, dtypes::float32).realize();
  Tensor ids = make_ids({1, 2, 3, 4, 40}, {N}, dtypes::int32).realize();
  UOp ast = only_kernel(table.embedding(ids));
  // Before: a REDUCE over a range of extent V; after the rewrite: neither.
  REQUIRE(has_reduce(ast));
  REQUIRE(has_range_of(ast, V));
  UOp direct = gather_loads(ast);
  CHECK_FALSE(has_reduce(direct));
  CHECK_FALSE(has_range_of(direct, V));
  // The compiled kernel is elementwise over (N, D) with no opts and with the heuristic's.
  for (int noopt : {1, 0}) {
    Kernel k = compile(ast, CodegenOptions{.noopt = noopt});
    CAPTURE(k.ks.name);
    CHECK(k.ks.name.rfind("E_", 0) == 0);
    CHECK(k.ks.name.find(std::to_string(V)) == std::string::npos);
    size_t loops = 0;  // one phi per loop: at most the N and D loops remain
    for (size_t p = k.ks.src.find(" phi "); p != std::string::npos;
         p = k.ks.src.find(" phi ", p + 1))
      ++loops;
    CHECK(loops <= 2);
  }
}

TEST_CASE("hand-built one-hot sums: where, cast and multiply forms, extra clauses, kept ranges") {
  // out[i] = Σ_e Σ_k [e == ids[i]] * tab[e, k]  (E = 9, K = 4, N = 6), three spellings, then
  // out2[i] = Σ_e where(e == ids[i] && e != 2, tab[e, 0], 0)
  const int64_t E = 9, K = 4, N = 6;
  std::vector<int32_t> ids = {0, 8, 9, -1, 2, 4};
  std::vector<float> tab = randf(E * K, 7);
  auto want_sum = [&](int64_t i, bool skip2) {
    int32_t e = ids[i];
    if (e < 0 || e >= E || (skip2 && e == 2)) return 0.f;
    float s = 0;
    for (int64_t k = 0; k < K; ++k) s += tab[e * K + k];
    return s;
  };
  UOp out = buf(0, dtypes::float32, N), pt = buf(1, dtypes::float32, E * K),
      pi = buf(2, dtypes::int32, N);
  UOp i = UOp::range(N, 0), e = UOp::range(E, 1, AxisType::Reduce),
      k = UOp::range(K, 2, AxisType::Reduce);
  UOp hit = e.cast(dtypes::int32).eq(load(pi, i));
  UOp x = load(pt, e * K + k), zero = UOp::cnst(dtypes::float32, 0);
  struct Form {
    std::string name;
    UOp value;
    bool skip2;
  };
  const Form forms[] = {
      {"where", hit.where(x, zero), false},
      {"cast", hit.where(x, zero).cast(dtypes::float64), false},
      {"mul", x * hit.cast(dtypes::float32), false},
      {"and", hit.alu(Op::AND, e.ne(idx(2))).where(x, zero), true},
  };
  for (const Form& f : forms) {
    CAPTURE(f.name);
    UOp sum = reduce(f.value, Op::ADD, {e, k});
    UOp ast =
        sink({store(out, i, sum.dtype() == dtypes::float32 ? sum : sum.cast(dtypes::float32))});
    UOp direct = gather_loads(ast);
    CHECK_FALSE(has_range_of(direct, E));
    CHECK(has_range_of(direct, K));  // the other reduce range stays
    Kernel kern = compile(ast);
    std::vector<float> vo(N, -7);
    kern.run({vo.data(), tab.data(), ids.data()});
    for (int64_t n = 0; n < N; ++n) CHECK(vo[n] == doctest::Approx(want_sum(n, f.skip2)));
  }
}

TEST_CASE("one-hot sums that are not gathers stay loops") {
  // The index depends on the reduce range; a MAX reduce; a range cast to a type too narrow for it;
  // an empty range (no row to clamp the index into).
  UOp out = buf(0, dtypes::float32, 4), pt = buf(1, dtypes::float32, 300),
      pi = buf(2, dtypes::int32, 300);
  UOp i = UOp::range(4, 0), r = UOp::range(300, 1, AxisType::Reduce),
      empty = UOp::range(0, 2, AxisType::Reduce);
  UOp x = load(pt, r), zero = UOp::cnst(dtypes::float32, 0);
  const UOp values[] = {
      reduce(r.cast(dtypes::int32).eq(load(pi, r)).where(x, zero), Op::ADD, {r}),
      reduce(r.cast(dtypes::int32).eq(load(pi, i)).where(x, zero), Op::MAX, {r}),
      reduce(r.cast(dtypes::int8).eq(load(pi, i).cast(dtypes::int8)).where(x, zero), Op::ADD, {r}),
      reduce(empty.cast(dtypes::int32).eq(load(pi, i)).where(load(pt, empty), zero), Op::ADD,
             {empty}),
  };
  for (const UOp& v : values) {
    UOp ast = sink({store(out, i, v)});
    CHECK(gather_loads(ast) == ast);
  }
}
