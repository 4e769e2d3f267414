// Symbolic shapes through the Tensor API: slices with variable bounds, reductions and matmuls over
// a symbolic length, one graph realized for several bound values.
#include <doctest/doctest.h>

#include <numeric>

#include "base/error.h"
#include "runtime/jit.h"
#include "schedule/schedule.h"
#include "tensor/tensor.h"

using namespace ugrad;

namespace {

std::vector<float> iota_floats(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}
}  // namespace

TEST_CASE("tensor: symbolic slice shapes") {
  Tensor cache = Tensor::from_vector(iota_floats(32), {8, 4});
  UOp t = UOp::variable("T", 1, 8);
  Tensor rows = cache.shrink_to({{dim(0), t}, {dim(0), dim(4)}});
  CHECK(shape_str(rows.shape()) == "(T, 4)");
  CHECK(shape_str(rows.sum({0}).shape()) == "(4,)");
  CHECK(shape_str(rows.matmul(Tensor::ones({4, 2})).shape()) == "(T, 2)");
  CHECK(shape_str((rows + Tensor::ones({4})).shape()) == "(T, 4)");
  CHECK_THROWS_WITH_AS(rows.dims(), doctest::Contains("variable without a value"), Error);
  Tensor bound = cache.shrink_to({{dim(0), bind_variable(t, 3)}, {dim(0), dim(4)}});
  CHECK(shape_str(bound.shape()) == "(T=3, 4)");  // symbolic, at its value when read
  CHECK(bound.dims() == std::vector<int64_t>{3, 4});
  CHECK(bound.numel() == 12);
  CHECK(bound.to_vector<float>() == std::vector<float>(iota_floats(12)));
  CHECK_THROWS_WITH_AS(bind_variable(t, 9), doctest::Contains("outside its range [1, 8]"), Error);
  CHECK_THROWS_AS(cache.shrink_to({{dim(0), dim(9)}, {dim(0), dim(4)}}), Error);
}

TEST_CASE("tensor: one symbolic graph realized for several lengths") {
  Tensor cache = Tensor::from_vector(iota_floats(32), {8, 4});
  UOp t = UOp::variable("T", 1, 8), start = UOp::variable("start_pos", 0, 4);
  for (int64_t n : {1, 3, 4}) {
    for (int64_t sp : {0, 2, 4}) {
      const UOp bt = bind_variable(t, n), bs = bind_variable(start, sp);
      Tensor rows = cache.shrink_to({{bs, bs + bt}, {dim(0), dim(4)}});  // (T, 4)
      Tensor sum = rows.sum({0});
      Tensor mean = rows.mean({0});
      Tensor proj = rows.matmul(Tensor::ones({4, 2}));  // (T, 2): row sums twice
      std::vector<Tensor> outs{sum, mean, proj};
      const JitStats before = jit_stats();
      Tensor::realize_all(outs);
      // The values stay out of the cache keys: the first pair compiled what every other reuses.
      if (n != 1 || sp != 0) CHECK(jit_stats().compiles == before.compiles);
      std::vector<float> want_sum(4, 0), want_proj;
      for (int64_t r = sp; r < sp + n; ++r) {
        float row = 0;
        for (int64_t c = 0; c < 4; ++c) {
          want_sum[c] += static_cast<float>(r * 4 + c);
          row += static_cast<float>(r * 4 + c);
        }
        want_proj.insert(want_proj.end(), {row, row});
      }
      CAPTURE(n);
      CAPTURE(sp);
      CHECK(outs[0].to_vector<float>() == want_sum);
      std::vector<float> mean_got = outs[1].to_vector<float>();
      for (int64_t c = 0; c < 4; ++c)
        CHECK(mean_got[c] == doctest::Approx(want_sum[c] / static_cast<float>(n)));
      CHECK(outs[2].dims() == std::vector<int64_t>{n, 2});
      CHECK(outs[2].to_vector<float>() == want_proj);
    }
  }
}

TEST_CASE("tensor: a symbolic dim read as a value") {
  UOp t = UOp::variable("T", 1, 8);
  Tensor x = Tensor::from_dim(bind_variable(t, 5)) * 10;
  CHECK(x.dtype() == dtypes::int32);
  x.realize();
  CHECK(x.item<int>() == 50);
}

TEST_CASE("tensor: a variable without a value, or with two, is an Error") {
  UOp t = UOp::variable("T", 1, 8);
  CHECK_THROWS_WITH_AS((Tensor::from_dim(t) * 10).realize(),
                       doctest::Contains("variable 'T' is not bound"), Error);
  Tensor two = Tensor::from_dim(bind_variable(t, 3)) + Tensor::from_dim(bind_variable(t, 4));
  CHECK_THROWS_WITH_AS(two.realize(), doctest::Contains("'T' is bound to both 3 and 4"), Error);
}
