// Optimizers against torch.optim's update rules run on the host, three steps each; gradient
// clipping and the learning-rate schedule against their definitions; mixed precision; a training
// step captured by a TensorJit against the same step run eagerly; a fitting task whose loss falls.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "tensor/jit.h"
#include "tensor/optim.h"
#include "tensor/tensor.h"

using namespace ugrad;

namespace {

std::vector<double> randoms(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

Tensor param(const std::vector<double>& v, DType t = dtypes::float64) {
  return Tensor::from_doubles(v, {static_cast<int64_t>(v.size())}, t, "CPU").requires_grad_();
}

// The loss sum(w^3 * c): its gradient 3 w^2 c changes with w, so the steps differ.
Tensor cubic_loss(const Tensor& w, const std::vector<double>& c) {
  return (w * w * w * Tensor::from_doubles(c, {static_cast<int64_t>(c.size())}, w.dtype(), "CPU"))
      .sum();
}

void run_steps(Optimizer& opt, Tensor& w, const std::vector<double>& c, int steps) {
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    cubic_loss(w, c).backward();
    opt.step();
  }
}

// The host reference: the same loss's gradient and an update rule per step.
std::vector<double> host_steps(
    std::vector<double> w, const std::vector<double>& c, int steps,
    const std::function<void(std::vector<double>&, const std::vector<double>&, int)>& rule) {
  for (int s = 1; s <= steps; ++s) {
    std::vector<double> g(w.size());
    for (size_t i = 0; i < w.size(); ++i) g[i] = 3 * w[i] * w[i] * c[i];
    rule(w, g, s);
  }
  return w;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i, ": ", got[i], " vs ", want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("SGD with momentum, Nesterov and weight decay follows torch's rule") {
  const auto w0 = randoms(6, 1), c = randoms(6, 2);
  for (bool nesterov : {false, true}) {
    Tensor w = param(w0);
    SGD opt({w}, {.lr = 0.1, .momentum = 0.9, .nesterov = nesterov, .weight_decay = 0.01});
    run_steps(opt, w, c, 3);
    std::vector<double> buf(6, 0);
    const auto want = host_steps(w0, c, 3, [&](auto& x, const auto& grad, int) {
      for (size_t i = 0; i < x.size(); ++i) {
        const double g = grad[i] + 0.01 * x[i];
        buf[i] = 0.9 * buf[i] + g;
        x[i] -= 0.1 * (nesterov ? g + 0.9 * buf[i] : buf[i]);
      }
    });
    check_close(w.to_doubles(), want, 1e-12);
  }
}

TEST_CASE("Adam and AdamW follow torch's rules, bias correction included") {
  const auto w0 = randoms(5, 3), c = randoms(5, 4);
  for (bool decoupled : {false, true}) {
    Tensor w = param(w0);
    Adam opt({w}, {.lr = 0.01, .weight_decay = 0.1, .decoupled = decoupled});
    run_steps(opt, w, c, 3);
    std::vector<double> m(5, 0), v(5, 0);
    const auto want = host_steps(w0, c, 3, [&](auto& x, const auto& grad, int t) {
      for (size_t i = 0; i < x.size(); ++i) {
        double g = grad[i];
        if (decoupled)
          x[i] *= 1 - 0.01 * 0.1;
        else
          g += 0.1 * x[i];
        m[i] = 0.9 * m[i] + 0.1 * g;
        v[i] = 0.999 * v[i] + 0.001 * g * g;
        const double mh = m[i] / (1 - std::pow(0.9, t)), vh = v[i] / (1 - std::pow(0.999, t));
        x[i] -= 0.01 * mh / (std::sqrt(vh) + 1e-8);
      }
    });
    check_close(w.to_doubles(), want, 1e-12);
  }
}

TEST_CASE("set_lr changes the rate the next step uses, zero_grad clears") {
  Tensor w = param({1, 2});
  SGD opt({w}, {.lr = 1});
  opt.set_lr(0.5);
  (w * 2).sum().backward();
  opt.step();
  CHECK(w.to_doubles() == std::vector<double>{0, 1});
  opt.zero_grad();
  CHECK_FALSE(w.grad().defined());
  opt.step();  // no gradient: nothing moves
  CHECK(w.to_doubles() == std::vector<double>{0, 1});
}

TEST_CASE("clip_grad_norm scales every gradient by the global norm") {
  Tensor a = param({3, 0}), b = param({0, 4});
  (a * a).sum().backward();  // grad (6, 0)
  (b * b).sum().backward();  // grad (0, 8): global norm 10
  std::vector<Tensor> ps{a, b};
  const Tensor norm = clip_grad_norm(ps, 5);
  CHECK(norm.item<float>() == doctest::Approx(10));
  check_close(a.grad().to_doubles(), {3, 0}, 1e-6);
  check_close(b.grad().to_doubles(), {0, 4}, 1e-6);
  clip_grad_norm(ps, 100);  // under the limit: unchanged
  check_close(b.grad().to_doubles(), {0, 4}, 1e-6);
}

TEST_CASE("warm-up then cosine decay") {
  CHECK(warmup_cosine_lr(0, 10, 110, 1.0, 0.1) == doctest::Approx(0.1));
  CHECK(warmup_cosine_lr(9, 10, 110, 1.0, 0.1) == doctest::Approx(1.0));
  CHECK(warmup_cosine_lr(10, 10, 110, 1.0, 0.1) == doctest::Approx(1.0));
  CHECK(warmup_cosine_lr(60, 10, 110, 1.0, 0.1) == doctest::Approx(0.55));
  CHECK(warmup_cosine_lr(110, 10, 110, 1.0, 0.1) == doctest::Approx(0.1));
  CHECK(warmup_cosine_lr(500, 10, 110, 1.0, 0.1) == doctest::Approx(0.1));
}

TEST_CASE("a float16 parameter is updated through a float32 master copy") {
  // Steps of 1e-4 on weights near 1 vanish in float16 (its spacing there is ~1e-3); the master
  // accumulates them.
  Tensor w = param({1, 1}, dtypes::float16);
  SGD opt({w}, {.lr = 1e-4});
  for (int s = 0; s < 20; ++s) {
    opt.zero_grad();
    w.sum().backward();  // gradient 1
    opt.step();
  }
  CHECK(w.dtype() == dtypes::float16);
  check_close(w.to_doubles(), {0.998, 0.998}, 5e-4);
}

TEST_CASE("a training step captured by a TensorJit equals the eager step") {
  // Linear regression: loss = mean((x W - y)^2), Adam, 6 steps.
  const auto xv = randoms(8 * 3, 5), yv = randoms(8 * 2, 6), wv = randoms(3 * 2, 7);
  const Tensor x = Tensor::from_doubles(xv, {8, 3}, dtypes::float32, "CPU");
  const Tensor y = Tensor::from_doubles(yv, {8, 2}, dtypes::float32, "CPU");
  const auto make = [&] {
    return Tensor::from_doubles(wv, {3, 2}, dtypes::float32, "CPU").requires_grad_();
  };
  Tensor eager_w = make(), jit_w = make();
  Adam eager({eager_w}, {.lr = 0.05}), captured({jit_w}, {.lr = 0.05});
  std::vector<double> eager_losses;
  for (int s = 0; s < 6; ++s) {
    eager.zero_grad();
    Tensor loss = (x.matmul(eager_w) - y).square().mean();
    loss.backward();
    eager.step({loss});
    eager_losses.push_back(loss.item<double>());
  }
  TensorJit step([&](const std::vector<Tensor>& in) {
    captured.zero_grad();
    Tensor loss = (in[0].matmul(jit_w) - in[1]).square().mean();
    loss.backward();
    captured.step({loss});
    return std::vector<Tensor>{loss};
  });
  for (int s = 0; s < 6; ++s) {
    const double loss = step({x, y})[0].item<double>();
    CHECK(loss == doctest::Approx(eager_losses[s]).epsilon(1e-6));
  }
  CHECK(step.graph().calls() == 6);
  check_close(jit_w.to_doubles(), eager_w.to_doubles(), 1e-6);
}

TEST_CASE("the loss falls on a fitting task") {
  // A two-layer MLP fits y = sin(3x) on 64 points.
  std::vector<double> xs, ys;
  for (int i = 0; i < 64; ++i) {
    xs.push_back(-1 + 2.0 * i / 63);
    ys.push_back(std::sin(3 * xs.back()));
  }
  const Tensor x = Tensor::from_doubles(xs, {64, 1}, dtypes::float32, "CPU");
  const Tensor y = Tensor::from_doubles(ys, {64, 1}, dtypes::float32, "CPU");
  Tensor::manual_seed(3);
  Tensor w1 = (Tensor::randn({1, 32}, dtypes::float32, "CPU")).realize().requires_grad_();
  Tensor b1 = Tensor::zeros({32}, dtypes::float32, "CPU").requires_grad_();
  Tensor w2 = (Tensor::randn({32, 1}, dtypes::float32, "CPU") * 0.2).realize().requires_grad_();
  Adam opt({w1, b1, w2}, {.lr = 0.02});
  TensorJit step([&](const std::vector<Tensor>& in) {
    opt.zero_grad();
    Tensor loss = ((in[0].matmul(w1) + b1).tanh().matmul(w2) - in[1]).square().mean();
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  const double first = step({x, y})[0].item<double>();
  double last = first;
  for (int s = 0; s < 300; ++s) last = step({x, y})[0].item<double>();
  MESSAGE("loss ", first, " -> ", last);
  CHECK(last < 0.05 * first);
}

TEST_CASE("a read of a buffer runs before an assignment to it in the same schedule") {
  for (bool assign_first : {true, false}) {
    Tensor x = Tensor::from_vector<float>({1, 2}, {2}, std::nullopt, "CPU");
    Tensor written = x.assign(x + 1);
    Tensor read = x * 10;  // built from x's value before the assignment
    std::vector<Tensor> both =
        assign_first ? std::vector<Tensor>{written, read} : std::vector<Tensor>{read, written};
    Tensor::realize_all(both);
    CHECK(read.to_vector<float>() == std::vector<float>{10, 20});
    CHECK(x.to_vector<float>() == std::vector<float>{2, 3});
  }
  // One kernel wanting the value from before and from after: an Error, not a silent choice.
  Tensor y = Tensor::from_vector<float>({1, 2}, {2}, std::nullopt, "CPU");
  Tensor w = y.assign(y * 2);
  Tensor mixed = (y + w).contiguous();
  std::vector<Tensor> all{w, mixed};
  CHECK_THROWS_WITH_AS(Tensor::realize_all(all), doctest::Contains("both before and after"), Error);
}
