// The GPU decompositions of f64 exp2/log2/sin and of range-reduced f32 sin, run on the CPU (the
// same UOps) against libm.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "codegen/lower/gpu_decomp.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

template <typename T>
std::vector<T> run_unary(DType t, const std::vector<T>& in, const std::function<UOp(UOp)>& f) {
  const int64_t n = int64_t(in.size());
  UOp out = buf(0, t, n), a = buf(1, t, n);
  UOp i = UOp::range(n, 0);
  Kernel k = compile(sink({store(out, i, f(load(a, i)))}), {.noopt = 1});
  std::vector<T> res(in.size());
  k.run({res.data(), const_cast<T*>(in.data())});
  return res;
}

// Relative error in units of the last place of `want`.
double ulps(double got, double want) {
  if (got == want) return 0;
  return std::fabs(got - want) / std::fabs(std::nextafter(want, INFINITY) - want);
}

}  // namespace

TEST_CASE("exp2_f64 matches std::exp2 (normal, subnormal, overflow, NaN)") {
  std::vector<double> x;
  for (double v = -1080; v <= 1030; v += 0.731) x.push_back(v);
  for (double v : {0.0, -0.0, 1e-300, 0.5, -0.5, 1023.99, -1074.0, 2000.0, -2000.0}) x.push_back(v);
  x.push_back(std::numeric_limits<double>::quiet_NaN());
  auto r = run_unary<double>(dtypes::float64, x, exp2_f64);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp2(x[i]);
    if (std::isnan(want)) {
      CHECK(std::isnan(r[i]));
    } else if (std::isinf(want)) {
      CHECK(r[i] == want);
    } else if (want < 1e-300) {
      CHECK(std::fabs(r[i] - want) <= 1e-300);
    } else {
      worst = std::max(worst, ulps(r[i], want));
    }
  }
  MESSAGE("exp2_f64 worst ulps: ", worst);
  CHECK(worst < 4);
}

TEST_CASE("log2_f64 matches std::log2 (subnormals, 0, negative, inf)") {
  std::vector<double> x;
  for (double v = 1e-310; v < 1e300; v *= 3.7) x.push_back(v);
  for (double v = 0.5; v < 2.5; v += 0.0137) x.push_back(v);
  for (double v : {0.0, -1.0, 1.0, 2.0, double(INFINITY), 4.9e-324}) x.push_back(v);
  auto r = run_unary<double>(dtypes::float64, x, log2_f64);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::log2(x[i]);
    CAPTURE(x[i]);
    if (std::isnan(want) || std::isinf(want)) {
      CHECK((std::isnan(want) ? std::isnan(r[i]) : r[i] == want));
    } else if (std::fabs(want) < 1e-3) {
      CHECK(std::fabs(r[i] - want) < 1e-18);
    } else {
      worst = std::max(worst, ulps(r[i], want));
    }
  }
  MESSAGE("log2_f64 worst ulps: ", worst);
  CHECK(worst < 4);
}

TEST_CASE("sin_f64 matches std::sin up to |x| = 1e5") {
  std::vector<double> x;
  for (double v = -100; v <= 100; v += 0.0917) x.push_back(v);
  for (double v = 1; v < 1e5; v *= 1.37) x.push_back(v);
  auto r = run_unary<double>(dtypes::float64, x, sin_f64);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(r[i] - std::sin(x[i])));
  MESSAGE("sin_f64 worst abs error: ", worst);
  CHECK(worst < 1e-15);
  auto nan = run_unary<double>(dtypes::float64, {INFINITY, std::nan("")}, sin_f64);
  CHECK(std::isnan(nan[0]));
  CHECK(std::isnan(nan[1]));
}

TEST_CASE("sin_reduced (f32) keeps accuracy at large |x|") {
  std::vector<float> x;
  for (float v = -1000; v <= 1000; v += 0.37f) x.push_back(v);
  auto r = run_unary<float>(dtypes::float32, x, sin_reduced);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(double(r[i]) - std::sin(double(x[i]))));
  MESSAGE("sin_reduced worst abs error: ", worst);
  CHECK(worst < 2e-4);
}
