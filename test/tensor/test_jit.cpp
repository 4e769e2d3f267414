// The tensor-level JIT on a causal attention over a cache with a symbolic start_pos and a
// symbolic chunk length T: every T and several start_pos through one capture, equal to eager.
#include <doctest/doctest.h>

#include <cmath>

#include "base/error.h"
#include "schedule/schedule.h"
#include "tensor/jit.h"

using namespace ugrad;

namespace {

constexpr int64_t kMaxT = 32, kCtx = 64, kDim = 16;
const UOp kT = UOp::variable("T", 1, kMaxT);
const UOp kStart = UOp::variable("start_pos", 0, kCtx - kMaxT);

// softmax(q k^T / sqrt(d) + causal mask) v over the cache rows [0, start_pos + T), with T and
// start_pos bound.
Tensor attention(const Tensor& q, const Tensor& keys, const Tensor& values, const UOp& t,
                 const UOp& start) {
  UOp s = start + t;
  Tensor k = keys.shrink_to({{dim(0), s}, {dim(0), dim(kDim)}});
  Tensor v = values.shrink_to({{dim(0), s}, {dim(0), dim(kDim)}});
  Tensor scores = q.matmul(k.transpose()) * (1.0 / std::sqrt(double(kDim)));
  // Query i sits at start_pos + i and sees keys j <= start_pos + i (built at the maximum sizes).
  Tensor qpos = (Tensor::from_dim(start) + Tensor::arange(kMaxT)).reshape({kMaxT, 1});
  Tensor kpos = Tensor::arange(kCtx).reshape({1, kCtx});
  Tensor mask = kpos.le(qpos).where(0.0, -INFINITY).shrink_to({{dim(0), t}, {dim(0), s}});
  return (scores + mask).softmax(-1).matmul(v);
}

// A realized (T, d) query, T bound: a view of a buffer that holds kMaxT rows.
Tensor query(uint64_t seed, const UOp& t) {
  Tensor::manual_seed(seed);
  Tensor full = Tensor::randn({kMaxT, kDim});
  full.realize();
  Tensor q = full.shrink_to({{dim(0), t}, {dim(0), dim(kDim)}});
  REQUIRE(q.is_realized());
  return q;
}

}  // namespace

TEST_CASE("causal attention with symbolic T and start_pos: one capture, replay equals eager") {
  Tensor::manual_seed(1);
  Tensor keys = Tensor::randn({kCtx, kDim}), values = Tensor::randn({kCtx, kDim});
  keys.realize();
  values.realize();
  TensorJit jit([&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{
        attention(in[0], keys, values, in[1].node(), in[2].node()).contiguous()};
  });
  int64_t calls = 0;
  for (int64_t start : {0, 7, 32})
    for (int64_t t = 1; t <= kMaxT; t += (t < 4 ? 1 : 5)) {
      const UOp bt = bind_variable(kT, t), bs = bind_variable(kStart, start);
      Tensor q = query(100 + calls, bt);
      // Eager: the same graph (symbolic shapes over the bound variables) realized, then read.
      Tensor e = attention(q, keys, values, bt, bs).contiguous();
      e.realize();
      std::vector<float> eager = e.to_vector<float>();
      JitStats before = jit_stats();
      Tensor out = jit({q, Tensor(bt, ""), Tensor(bs, "")})[0];
      if (calls >= 2) {
        CHECK(jit_stats().schedules == before.schedules);
        CHECK(jit_stats().compiles == before.compiles);
      }
      CHECK(out.dims() == std::vector<int64_t>{t, kDim});  // bound to this call's T
      std::vector<float> got = out.to_vector<float>();
      REQUIRE(got.size() == static_cast<size_t>(t * kDim));
      CAPTURE(t);
      CAPTURE(start);
      CHECK(got == eager);
      ++calls;
    }
  CHECK(jit.graph().calls() == calls);
  CHECK(jit.graph().captured_kernels() >= 1);
}

TEST_CASE("capture_without_running compiles and records but runs nothing, calls then replay") {
  // acc += 2x + 1 through a materialized intermediate: a write to a buffer the function does
  // not own, which a run would show.
  Tensor acc = Tensor::zeros({4}).contiguous();
  acc.realize();
  GraphJit jit(
      [&](const std::vector<UOp>& in) {
        Tensor doubled = (Tensor(in[0], "CPU") * 2).contiguous();
        acc.assign(acc + doubled + 1).realize();
        return std::vector<UOp>{acc.node()};
      },
      "dry");
  auto input = [](std::vector<float> v) {
    Tensor x = Tensor::from_vector(v, {4});
    x.realize();
    return x.node();
  };
  jit.capture_without_running({input({5, 5, 5, 5})});
  CHECK(acc.to_vector<float>() == std::vector<float>{0, 0, 0, 0});
  CHECK(jit.calls() == 2);
  CHECK(jit.captured_kernels() >= 2);
  const JitStats before = jit_stats();
  jit({input({1, 2, 3, 4})});
  CHECK(jit_stats().schedules == before.schedules);
  CHECK(jit_stats().compiles == before.compiles);
  CHECK(acc.to_vector<float>() == std::vector<float>{3, 5, 7, 9});
  jit({input({0, 0, 1, 1})});
  CHECK(acc.to_vector<float>() == std::vector<float>{4, 6, 10, 12});
  // Once called, it does nothing.
  jit.capture_without_running({input({9, 9, 9, 9})});
  CHECK(acc.to_vector<float>() == std::vector<float>{4, 6, 10, 12});
}
