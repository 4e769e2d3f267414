// The realize engine end to end on the CPU: hand-built tensor graphs against plain loops.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "base/env.h"
#include "base/error.h"
#include "codegen/codegen.h"
#include "runtime/compile_observer.h"
#include "runtime/jit.h"
#include "runtime/realize.h"
#include "schedule/schedule.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

UOp from(const std::vector<float>& v, std::vector<int64_t> dims) {
  UOp b = new_buffer("CPU", dtypes::float32, static_cast<int64_t>(v.size()));
  copy_in(b, std::as_bytes(std::span(v)));
  return buffer_view(b, make_shape(dims));
}

std::vector<float> read(const UOp& realized) {
  UOp b = realized_buffer(realized);
  std::vector<float> out(b.arg_as<BufferArg>().size);
  copy_out(b, std::as_writable_bytes(std::span(out)));
  return out;
}

std::vector<float> run(const UOp& graph) { return read(realize(std::vector<UOp>{graph})[0]); }

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("elementwise, broadcast and constants") {
  auto va = random_vec(12, 1), vb = random_vec(4, 2);
  UOp a = from(va, {3, 4});
  UOp b = mop(Op::EXPAND, mop(Op::RESHAPE, from(vb, {4}), {1, 4}), {3, 4});
  std::vector<float> got = run((a + b) * full(2, {3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(got[i * 4 + j] == doctest::Approx((va[i * 4 + j] + vb[j]) * 2));
}

TEST_CASE("reductions over inner, outer and all axes") {
  auto v = random_vec(6 * 7, 3);
  UOp x = from(v, {6, 7});
  std::vector<float> rows = run(reduce(x, Op::ADD, {1}));
  std::vector<float> cols = run(reduce(x, Op::MAX, {0}));
  std::vector<float> all = run(reduce(x, Op::ADD, {0, 1}));
  double total = 0;
  for (int i = 0; i < 6; ++i) {
    double s = 0;
    for (int j = 0; j < 7; ++j) s += v[i * 7 + j];
    CHECK(rows[i] == doctest::Approx(s).epsilon(1e-5));
    total += s;
  }
  for (int j = 0; j < 7; ++j) {
    float m = -INFINITY;
    for (int i = 0; i < 6; ++i) m = std::max(m, v[i * 7 + j]);
    CHECK(cols[j] == m);
  }
  CHECK(all[0] == doctest::Approx(total).epsilon(1e-5));
}

TEST_CASE("matmul with bias and relu, fused") {
  int64_t n = 5, k = 9, m = 3;
  auto va = random_vec(n * k, 4), vb = random_vec(k * m, 5), vbias = random_vec(m, 6);
  UOp mm = matmul(from(va, {n, k}), from(vb, {k, m}), n, k, m);
  UOp bias = mop(Op::EXPAND, mop(Op::RESHAPE, from(vbias, {m}), {1, m}), {n, m});
  std::vector<float> got = run((mm + bias).alu(Op::MAX, full(0, {n, m})));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = vbias[j];
      for (int64_t t = 0; t < k; ++t) s += double(va[i * k + t]) * vb[t * m + j];
      CHECK(got[i * m + j] == doctest::Approx(std::max(s, 0.0)).epsilon(1e-5));
    }
}

TEST_CASE("movement ops: permute, pad, shrink, flip") {
  auto v = random_vec(2 * 3, 7);
  UOp x = from(v, {2, 3});
  std::vector<float> t = run(permute(x, {1, 0}) + full(0, {3, 2}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) CHECK(t[j * 2 + i] == v[i * 3 + j]);
  std::vector<float> p = run(mop(Op::PAD, x, {1, 0, 0, 2}));  // (2,3) -> (3,5)
  REQUIRE(p.size() == 15);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j)
      CHECK(p[i * 5 + j] == ((i >= 1 && j < 3) ? v[(i - 1) * 3 + j] : 0.0f));
  std::vector<float> s = run(mop(Op::SHRINK, x, {0, 1, 2, 3}));  // rows [0,2), cols [1,3)
  CHECK(s == std::vector<float>{v[1], v[2], v[4], v[5]});
  std::vector<float> f = run(flip(x, {1}) + full(0, {2, 3}));
  CHECK(f == std::vector<float>{v[2], v[1], v[0], v[5], v[4], v[3]});
}

TEST_CASE("softmax over the last axis") {
  auto v = random_vec(4 * 10, 8);
  UOp x = from(v, {4, 10});
  UOp mx = mop(Op::EXPAND, reduce(x, Op::MAX, {1}), {4, 10});
  UOp e = (x - mx).alu(Op::EXP2);
  UOp sm = mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {4, 10});
  std::vector<float> got = run(e * sm.alu(Op::RECIP));
  for (int i = 0; i < 4; ++i) {
    double mxv = -INFINITY, sum = 0;
    for (int j = 0; j < 10; ++j) mxv = std::max<double>(mxv, v[i * 10 + j]);
    for (int j = 0; j < 10; ++j) sum += std::exp2(v[i * 10 + j] - mxv);
    for (int j = 0; j < 10; ++j)
      CHECK(got[i * 10 + j] == doctest::Approx(std::exp2(v[i * 10 + j] - mxv) / sum).epsilon(1e-5));
  }
}

TEST_CASE("a symbolic length: the same kernel serves every bound value") {
  auto v = random_vec(32, 9);
  UOp x = from(v, {32});
  UOp t = UOp::variable("T", 1, 32);
  auto sum_to = [&](const UOp& len) {
    return reduce(UOp::make(Op::SHRINK, x.dtype(), {x, dim(0), len}), Op::ADD, {0});
  };
  int64_t compiles = -1;
  for (int64_t n : {1, 7, 32}) {
    std::vector<float> got = run(sum_to(bind_variable(t, n)));
    double want = std::accumulate(v.begin(), v.begin() + n, 0.0);
    CHECK(got[0] == doctest::Approx(want).epsilon(1e-5));
    if (compiles >= 0) CHECK(jit_stats().compiles == compiles);  // the first value compiled it
    compiles = jit_stats().compiles;
  }
  CHECK_THROWS_WITH_AS(run(sum_to(t)), doctest::Contains("variable 'T' is not bound"), Error);
}

TEST_CASE("DEBUG=2's work estimate of a symbolic-length kernel uses the bound length") {
  UOp x = from(random_vec(32, 9), {32});
  UOp t = UOp::variable("T", 1, 32);
  UOp s = reduce(UOp::make(Op::SHRINK, x.dtype(), {x, dim(0), t}), Op::ADD, {0});
  Schedule sched = create_schedule({s});
  REQUIRE(sched.items.size() == 1);
  const UOp estimate = codegen(sched.items[0].ast, cpu_codegen_target()).flops;
  CHECK(launch_estimate(estimate, {{"T", 7}}) == 7);  // one add per element summed
  CHECK(launch_estimate(estimate, {{"T", 32}}) == 32);
  CHECK(launch_estimate(estimate, {}) == 32);  // unbound: its maximum
  // bytes: the T floats summed and the one written
  const UOp bytes = codegen(sched.items[0].ast, cpu_codegen_target()).bytes;
  CHECK(launch_estimate(bytes, {{"T", 7}}) == 7 * 4 + 4);
  CHECK(launch_estimate(bytes, {}) == 32 * 4 + 4);
}

TEST_CASE("a launch estimate with its variables bound evaluates divisions, maxima and choices") {
  // max((T + 3) / 4, 2) * (T < 5 ? 10 : 20): what the estimate of a kernel over a symbolic
  // length can hold; evaluated per launch at DEBUG=2, without a rewrite.
  UOp t = UOp::variable("T", 1, 32);
  UOp quarter = (t + 3).alu(Op::IDIV, UOp::cnst_int(dtypes::index, 4));
  UOp at_least = quarter.alu(Op::MAX, UOp::cnst_int(dtypes::index, 2));
  UOp choice = UOp::make(Op::WHERE, dtypes::index,
                         {t.alu(Op::CMPLT, UOp::cnst_int(dtypes::index, 5)),
                          UOp::cnst_int(dtypes::index, 10), UOp::cnst_int(dtypes::index, 20)});
  const UOp estimate = at_least * choice;
  CHECK(launch_estimate(estimate, {{"T", 1}}) == 2 * 10);
  CHECK(launch_estimate(estimate, {{"T", 4}}) == 2 * 10);
  CHECK(launch_estimate(estimate, {{"T", 13}}) == 4 * 20);
  CHECK(launch_estimate(estimate, {{"T", 32}, {"other", 5}}) == 8 * 20);
  CHECK(launch_estimate(estimate, {{"other", 5}}) == 8 * 20);  // T unbound: its maximum
}

TEST_CASE("DEBUG=2's memory estimate counts the elements a kernel reaches, not whole buffers") {
  // One row of a 64 x 4 cache written from a 4-element buffer (a KV cache write at decode): 16
  // bytes read, 16 written, not the cache's 1 KiB.
  UOp cache = from(std::vector<float>(64 * 4, 0.0f), {64, 4});
  UOp row = from(random_vec(4, 10), {1, 4});
  UOp target = mop(Op::SHRINK, cache, {5, 0, 6, 4});  // row 5
  Schedule sched = create_schedule({UOp::make(Op::ASSIGN, cache.dtype(), {target, row})});
  REQUIRE(sched.items.size() == 1);
  CHECK(launch_estimate(codegen(sched.items[0].ast, cpu_codegen_target()).bytes, {}) == 16 + 16);
  // A sum over both axes of the cache reads all of it once, whatever its loop order.
  Schedule all = create_schedule({reduce(cache, Op::ADD, {0, 1})});
  REQUIRE(all.items.size() == 1);
  CHECK(launch_estimate(codegen(all.items[0].ast, cpu_codegen_target()).bytes, {}) ==
        64 * 4 * 4 + 4);
}

TEST_CASE("assign into a slice of a realized buffer") {
  std::vector<float> zeros(8, 0.0f);
  UOp cache = from(zeros, {2, 4});
  UOp target = mop(Op::SHRINK, cache, {1, 1, 2, 3});  // row 1, cols [1,3)
  UOp val = full(5, {1, 2});
  UOp roots[] = {UOp::make(Op::ASSIGN, cache.dtype(), {target, val})};
  realize(roots);
  CHECK(read(cache) == std::vector<float>{0, 0, 0, 0, 0, 5, 5, 0});
}

TEST_CASE("buffer memory is freed with its node") {
  UOp b = new_buffer("CPU", dtypes::float32, 1000);
  BufferRef ref = buffer_of(b);
  std::weak_ptr<Buffer> weak = ref;
  ref.reset();
  CHECK_FALSE(weak.expired());
  b = UOp();
  CHECK(weak.expired());
}

TEST_CASE(
    "a variable bound inside the graph: its value travels separately, one kernel serves all") {
  auto v = random_vec(32, 10);
  UOp x = from(v, {32});
  UOp t = UOp::variable("T", 1, 32);
  for (int64_t n : {3, 17}) {
    UOp shr = UOp::make(Op::SHRINK, x.dtype(), {x, dim(0), t});
    // sum(x[:T]) + T, with T read as a value from the bound variable
    UOp tval = bind_variable(t, n).cast(dtypes::float32);
    UOp s = reduce(shr, Op::ADD, {0}) + mop(Op::RESHAPE, tval, {1});
    std::vector<float> got = run(s);
    double want = std::accumulate(v.begin(), v.begin() + n, 0.0) + static_cast<double>(n);
    CHECK(got[0] == doctest::Approx(want).epsilon(1e-5));
  }
  UOp both = bind_variable(t, 3).cast(dtypes::float32) + bind_variable(t, 4).cast(dtypes::float32);
  CHECK_THROWS_WITH_AS(run(both), doctest::Contains("bound to both 3 and 4"), Error);
  CHECK_THROWS_WITH_AS(bind_variable(t, 40), doctest::Contains("outside its range"), Error);
}

TEST_CASE("with VERIFY=1 every new kernel AST passes the verifier") {
  ScopedKnob verify(Knob::VERIFY, "1");
  auto v = random_vec(7 * 13, 11);
  UOp x = from(v, {7, 13});  // a shape no other test uses: its kernels are compiled here
  UOp mx = mop(Op::EXPAND, reduce(x, Op::MAX, {1}), {7, 13});
  UOp e = (x - mx).alu(Op::EXP2);
  UOp sm = mop(Op::EXPAND, reduce(e, Op::ADD, {1}), {7, 13});
  UOp padded = mop(Op::PAD, permute(e * sm.alu(Op::RECIP), {1, 0}), {1, 0, 0, 2});
  CHECK(run(padded).size() == 14 * 9);
}

TEST_CASE("the compile observer hears of each kernel compiled, and of none found compiled") {
  std::vector<CompileEvent> events;
  CompileObserver previous =
      set_compile_observer([&](const CompileEvent& e) { events.push_back(e); });
  const int64_t before = jit_stats().compiles;
  // A graph no other case builds: its kernel is new to this process.
  UOp x = from(random_vec(13, 21), {13});
  const auto graph = [&] { return reduce(x * x + x, Op::ADD, {0}); };
  run(graph());
  REQUIRE(events.size() == static_cast<size_t>(jit_stats().compiles - before));
  REQUIRE(!events.empty());
  CHECK(events.back().compiled == jit_stats().compiles);
  CHECK(events.back().kernel <= events.back().kernels);
  run(graph());  // compiled already: nothing to hear
  CHECK(events.size() == static_cast<size_t>(jit_stats().compiles - before));
  set_compile_observer(std::move(previous));
}
