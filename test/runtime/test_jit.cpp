// The JIT at the graph level: capture once, replay with swapped inputs and rebound variables.
// Each known capture/replay pitfall is a test here.
#include <doctest/doctest.h>

#include <random>

#include "base/env.h"
#include "base/error.h"
#include "runtime/jit.h"
#include "runtime/program_cache.h"
#include "runtime/realize.h"
#include "test/capture_stderr.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

const UOp kT = UOp::variable("T", 1, 32);
const UOp kStart = UOp::variable("start_pos", 0, 31);

// A (T, 8) input whose buffer holds 32 rows: the view shrinks it to the bound length.
UOp symbolic_input(const std::vector<float>& rows32x8) {
  UOp b = new_buffer("CPU", dtypes::float32, 32 * 8);
  copy_in(b, std::as_bytes(std::span(rows32x8)));
  return buffer_view(b, Shape{kT, dim(8)});
}

std::vector<float> read(const UOp& realized, size_t n) {
  UOp b = realized_buffer(realized);
  std::vector<float> out(b.arg_as<BufferArg>().size);
  copy_out(b, std::as_writable_bytes(std::span(out)));
  out.resize(n);
  return out;
}

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// out[t] = sum_j x[t, j] * 2 + sum of cache[0 : start_pos + T] (a read of symbolic length); in:
// x, cache, T and start_pos bound.
std::vector<UOp> body(const std::vector<UOp>& in) {
  UOp x = in[0], cache = in[1], kT = in[2], kStart = in[3];
  UOp rows =
      reduce(x * UOp::make(Op::EXPAND, x.dtype(),
                           {mop(Op::RESHAPE, UOp::cnst(dtypes::float32, 2), {1, 1}), kT, dim(8)}),
             Op::ADD, {1});  // (T, 1)
  UOp window = UOp::make(Op::SHRINK, cache.dtype(), {cache, dim(0), kStart + kT});
  UOp total = reduce(window, Op::ADD, {0});  // (1,)
  UOp total2 = UOp::make(Op::EXPAND, x.dtype(), {mop(Op::RESHAPE, total, {1, 1}), kT, dim(1)});
  return {rows + total2};
}

std::vector<float> expected(const std::vector<float>& x, const std::vector<float>& cache, int64_t t,
                            int64_t start) {
  double total = 0;
  for (int64_t i = 0; i < start + t; ++i) total += cache[i];
  std::vector<float> out;
  for (int64_t r = 0; r < t; ++r) {
    double s = 0;
    for (int j = 0; j < 8; ++j) s += x[r * 8 + j] * 2.0;
    out.push_back(static_cast<float>(s + total));
  }
  return out;
}

// The 64-float cache the body sums a symbolic prefix of, with its values.
struct Cache {
  std::vector<float> data = random_vec(64, 1);
  UOp buffer = new_buffer("CPU", dtypes::float32, 64);
  Cache() { copy_in(buffer, std::as_bytes(std::span(data))); }
  UOp view() const { return buffer_view(buffer, make_shape({64})); }
};

}  // namespace

TEST_CASE("every T and several start_pos through one capture, no compile or schedule on replay") {
  ProgramCache::instance();
  GraphJit jit(body, "test_jit");
  const Cache cache;
  UOp cache_view = cache.view();
  int64_t call = 0;
  for (int64_t start : {0, 5, 31})
    for (int64_t t = 1; t <= 32; ++t) {
      if (start + t > 63) continue;
      auto x = random_vec(32 * 8, static_cast<uint32_t>(100 + call));
      UOp in = symbolic_input(x);
      JitStats before = jit_stats();
      std::vector<UOp> out =
          jit({in, cache_view, bind_variable(kT, t), bind_variable(kStart, start)});
      JitStats after = jit_stats();
      if (call >= 2) {
        CHECK(after.schedules == before.schedules);
        CHECK(after.compiles == before.compiles);
      }
      std::vector<float> got = read(out[0], static_cast<size_t>(t));
      std::vector<float> want = expected(x, cache.data, t, start);
      for (int64_t r = 0; r < t; ++r) CHECK(got[r] == doctest::Approx(want[r]).epsilon(1e-5));
      ++call;
    }
  CHECK(jit.captured_kernels() >= 1);
}

TEST_CASE("DEBUG=2 times every replayed kernel, as it times kernels run through realize") {
  ProgramCache::instance();
  GraphJit jit(body, "test_jit");
  const Cache cache;
  UOp in = symbolic_input(random_vec(32 * 8, 2));
  ScopedKnob debug(Knob::DEBUG, "2");
  for (int call = 0; call < 2; ++call)
    jit({in, cache.view(), bind_variable(kT, 3), bind_variable(kStart, 1)});
  const std::string log = capture_stderr([&] {
    jit({in, cache.view(), bind_variable(kT, 4), bind_variable(kStart, 2)});
  });
  CHECK(log.find("test_jit: replaying") != std::string::npos);
  size_t lines = 0;
  for (size_t at = log.find("\nreplay "); at != std::string::npos;
       at = log.find("\nreplay ", at + 1)) {
    const size_t end = log.find('\n', at + 1);
    const std::string line = log.substr(at + 1, end - at - 1);
    CHECK(line.find(" ms ") != std::string::npos);
    CHECK(line.find("GFLOP/s") != std::string::npos);
    CHECK(line.find("GB/s") != std::string::npos);
    ++lines;
  }
  CHECK(lines == jit.captured_kernels());
}

TEST_CASE("DEBUG=2 on a device that runs nothing prints no time or speed (issue #28)") {
  // NULL compiles every kernel and runs none: a time, GFLOP/s or GB/s there would be made up.
  CHECK(get_device("CPU").runs_kernels());
  CHECK_FALSE(get_device("NULL").runs_kernels());
  ScopedKnob debug(Knob::DEBUG, "2");
  const auto check_lines = [](const std::string& log, const std::string& head) {
    size_t lines = 0;
    for (size_t at = log.find(head); at != std::string::npos; at = log.find(head, at + 1)) {
      if (at != 0 && log[at - 1] != '\n') continue;
      const std::string line = log.substr(at, log.find('\n', at) - at);
      CAPTURE(line);
      CHECK(line.find("compiled, not run (NULL runs nothing: no time)") != std::string::npos);
      CHECK(line.find(" ms ") == std::string::npos);
      CHECK(line.find("GFLOP/s") == std::string::npos);
      CHECK(line.find("GB/s") == std::string::npos);
      ++lines;
    }
    return lines;
  };
  UOp a = input({64}, dtypes::float32, "NULL");
  const std::string log = capture_stderr([&] { realize(std::vector<UOp>{a * a + a}); });
  CAPTURE(log);
  CHECK(check_lines(log, "NULL ") >= 1);

  GraphJit jit([](const std::vector<UOp>& in) { return std::vector<UOp>{in[0] + in[0]}; });
  UOp b = input({16}, dtypes::float32, "NULL");
  for (int call = 0; call < 2; ++call) jit({b});
  const std::string replay = capture_stderr([&] { jit({b}); });
  CAPTURE(replay);
  CHECK(check_lines(replay, "replay ") == jit.captured_kernels());
}

TEST_CASE("pitfall: an input of another shape or dtype than captured is an error") {
  GraphJit jit([](const std::vector<UOp>& in) { return std::vector<UOp>{in[0] + in[0]}; });
  UOp a = input({4}), b = input({5}), c = input({4}, dtypes::int32);
  jit({a});
  jit({a});
  jit({a});
  CHECK_THROWS_WITH_AS(jit({b}), doctest::Contains("captured float32 (4,)"), Error);
  CHECK_THROWS_WITH_AS(jit({c}), doctest::Contains("input 0 is int32"), Error);
}

TEST_CASE("pitfall: a variable a kernel reads must be an input, the same one as captured") {
  auto plus_t = [](const UOp& x, const UOp& t) {
    return x + UOp::make(Op::EXPAND, x.dtype(),
                         {mop(Op::RESHAPE, t.cast(dtypes::float32), {1}), dim(4)});
  };
  // The value is fixed inside the function: a replay could not change it.
  GraphJit fixed([&](const std::vector<UOp>& in) {
    return std::vector<UOp>{plus_t(in[0], bind_variable(kT, 3))};
  });
  UOp a = input({4});
  fixed({a});
  CHECK_THROWS_WITH_AS(fixed({a}), doctest::Contains("reads variable 'T', which is not an input"),
                       Error);
  GraphJit given(
      [&](const std::vector<UOp>& in) { return std::vector<UOp>{plus_t(in[0], in[1])}; });
  const std::vector<float> ones(4, 1.0f);
  UOp b = new_buffer("CPU", dtypes::float32, 4);
  copy_in(b, std::as_bytes(std::span(ones)));
  for (int call = 0; call < 3; ++call) {
    std::vector<float> got =
        read(given({buffer_view(b, make_shape({4})), bind_variable(kT, 5 + call)})[0], 4);
    CHECK(got == std::vector<float>(4, 6.0f + call));
  }
  CHECK_THROWS_WITH_AS(given({a, bind_variable(kStart, 1)}),
                       doctest::Contains("input 1 is variable 'start_pos', but the JIT captured "
                                         "variable 'T'"),
                       Error);
  CHECK_THROWS_WITH_AS(given({a, a}), doctest::Contains("input 1 is float32 (4,)"), Error);
}

TEST_CASE("pitfall: reading a value during capture is an error, not a silent stale read") {
  GraphJit jit([](const std::vector<UOp>& in) {
    UOp r = realize(std::vector<UOp>{in[0] + in[0]})[0];
    std::vector<float> host(4);
    copy_out(realized_buffer(r), std::as_writable_bytes(std::span(host)));
    return std::vector<UOp>{r};
  });
  UOp a = input({4});
  jit({a});
  CHECK_THROWS_WITH_AS(jit({a}), doctest::Contains("while a JIT is capturing"), Error);
}

TEST_CASE("pitfall: nested JITs are an error") {
  GraphJit inner([](const std::vector<UOp>& in) { return std::vector<UOp>{in[0] * in[0]}; });
  GraphJit outer([&](const std::vector<UOp>& in) { return inner(in); });
  UOp a = input({4});
  outer({a});
  CHECK_THROWS_WITH_AS(outer({a}), doctest::Contains("nested"), Error);
}

TEST_CASE("pitfall: replay outputs alias the captured buffers, a changed input changes them") {
  GraphJit jit([](const std::vector<UOp>& in) { return std::vector<UOp>{in[0] + in[0]}; });
  std::vector<float> one{1, 1, 1, 1}, two{2, 2, 2, 2};
  auto make = [](const std::vector<float>& v) {
    UOp b = new_buffer("CPU", dtypes::float32, 4);
    copy_in(b, std::as_bytes(std::span(v)));
    return buffer_view(b, make_shape({4}));
  };
  jit({make(one)});
  jit({make(one)});
  UOp out3 = jit({make(one)})[0];
  CHECK(read(out3, 4) == std::vector<float>{2, 2, 2, 2});
  UOp out4 = jit({make(two)})[0];
  CHECK(out3 == out4);  // the same buffer, overwritten
  CHECK(read(out4, 4) == std::vector<float>{4, 4, 4, 4});
}

TEST_CASE("intermediates of a captured graph share one planned arena, results stay exact") {
  // A chain of materialized steps: each intermediate dies after the next kernel reads it.
  auto chain = [](const std::vector<UOp>& in) {
    UOp x = in[0];
    for (int i = 0; i < 6; ++i)
      x = UOp::make(Op::CONTIGUOUS, x.dtype(), {x * full(2, {16}) + full(1, {16})});
    return std::vector<UOp>{x};
  };
  GraphJit jit(chain, "planned");
  std::vector<float> data(16);
  for (int i = 0; i < 16; ++i) data[i] = static_cast<float>(i);
  auto make = [&](float scale) {
    std::vector<float> v = data;
    for (float& f : v) f *= scale;
    UOp b = new_buffer("CPU", dtypes::float32, 16);
    copy_in(b, std::as_bytes(std::span(v)));
    return buffer_view(b, make_shape({16}));
  };
  for (float scale : {1.0f, 2.0f, 3.0f, 0.5f}) {
    std::vector<float> got = read(jit({make(scale)})[0], 16);
    for (int i = 0; i < 16; ++i) {
      float want = data[i] * scale;
      for (int k = 0; k < 6; ++k) want = want * 2 + 1;
      CHECK(got[i] == want);
    }
  }
  auto [arena, separate] = jit.arena_bytes();
  CHECK(separate == 5 * 16 * sizeof(float));    // five intermediates; the sixth is the output
  CHECK(arena <= 2 * 16 * sizeof(float) + 64);  // at most two alive at once (plus alignment)
}
