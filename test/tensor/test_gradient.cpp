// Gradients: every differentiable case of the op table (its shapes, broadcasting and
// non-contiguous layouts) against central differences in float64; ties, zeros and integer paths
// against their definitions; an MLP and an attention block against hand-derived backward passes;
// the Tensor API's rules (accumulation, no-grad scopes, errors).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>

#include "op_table.h"
#include "tensor/gradient.h"
#include "tensor/jit.h"
#include "tensor/tensor.h"

using namespace ugrad;

namespace {

std::vector<double> randoms(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

Tensor f64(const std::vector<double>& v, std::vector<int64_t> dims) {
  return Tensor::from_doubles(v, dims, dtypes::float64, "CPU");
}

Tensor leaf(const std::vector<double>& v, std::vector<int64_t> dims) {
  return f64(v, std::move(dims)).requires_grad_();
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what, " element ", i, ": ", got[i], " vs ", want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

// A case is differentiable here when its float inputs are continuous and its output, computed in
// float64, is float64.
bool differentiable(const optable::OpCase& c) {
  bool any = false;
  for (const optable::InputSpec& s : c.inputs) {
    if (is_float(s.dtype) && s.integral) return false;
    any = any || is_float(s.dtype);
  }
  return any;
}

}  // namespace

TEST_CASE("the gradient table has an entry for every op a tensor graph holds") {
  const std::vector<Op> entries = ops_with_gradient_entry();
  const std::set<Op> have(entries.begin(), entries.end());
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const bool in_tensor_graph = is_alu(op) || op_has(op, kTensor) || op == Op::CONST ||
                                 op == Op::PARAM || op == Op::RANGE || op == Op::AFTER;
    INFO(op_name(op));
    CHECK(have.count(op) == static_cast<size_t>(in_tensor_graph));
  }
}

TEST_CASE("every differentiable op-table case matches central differences in float64") {
  int checked = 0;
  for (const optable::OpCase& c : optable::op_table()) {
    if (!differentiable(c)) continue;
    std::mt19937_64 rng(optable::case_seed(c));
    std::vector<optable::InputStorage> storage;
    std::vector<DType> dtype;
    for (optable::InputSpec s : c.inputs) {
      if (is_float(s.dtype)) s.dtype = dtypes::float64;
      dtype.push_back(s.dtype);
      storage.push_back(optable::input_storage(s, rng));
    }
    const auto inputs_of = [&](const std::vector<Tensor>& stores) {
      std::vector<Tensor> in;
      for (size_t i = 0; i < stores.size(); ++i) in.push_back(storage[i].view(stores[i]));
      return in;
    };
    std::vector<Tensor> stores;
    for (size_t i = 0; i < storage.size(); ++i)
      stores.push_back(
          Tensor::from_doubles(storage[i].storage.v, storage[i].storage.dims, dtype[i], "CPU"));
    Tensor out;
    try {
      out = c.op(inputs_of(stores));
    } catch (const std::exception&) {
      continue;  // a case that needs its own dtype (float16 rounding, say)
    }
    if (out.dtype() != dtypes::float64 || out.numel() == 0) continue;
    INFO(c.name);
    const Tensor weights = f64(randoms(out.numel(), 7), out.dims());
    // The loss sum(op(inputs) * weights), replayed by a JIT for the finite differences.
    TensorJit loss_of([&](const std::vector<Tensor>& s) {
      return std::vector<Tensor>{(c.op(inputs_of(s)) * weights).sum()};
    });
    const double base = loss_of(stores)[0].item<double>();
    if (!std::isfinite(base)) continue;  // a NaN somewhere (pow of a negative base) has no slope
    for (size_t i = 0; i < stores.size(); ++i)
      if (is_float(dtype[i])) stores[i].requires_grad_();
    try {
      (c.op(inputs_of(stores)) * weights).sum().backward();
    } catch (const Error& e) {  // only through ops whose gradient is zero (trunc, comparisons)
      REQUIRE(std::string(e.what()).find("depends on no tensor") != std::string::npos);
    }
    for (size_t i = 0; i < stores.size(); ++i) {
      if (!is_float(dtype[i])) continue;
      std::vector<double> analytic(storage[i].storage.v.size(), 0.0);
      if (Tensor g = stores[i].grad(); g.defined()) analytic = g.to_doubles();
      // Up to 5 elements spread over the storage (the border a view skips included).
      const size_t n = analytic.size(), step = std::max<size_t>(1, n / 5);
      for (size_t j = n / 7 % step; j < n; j += step) {
        const auto loss_at = [&](double dx) {
          std::vector<Tensor> s = stores;
          std::vector<double> v = storage[i].storage.v;
          v[j] += dx;
          s[i] = Tensor::from_doubles(v, storage[i].storage.dims, dtype[i], "CPU");
          return loss_of(s)[0].item<double>();
        };
        const double h = 1e-6 * std::max(1.0, std::fabs(storage[i].storage.v[j]));
        const double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
        INFO("input ", i, " element ", j, ": analytic ", analytic[j], " numeric ", numeric);
        CHECK(std::fabs(analytic[j] - numeric) <= 1e-5 + 1e-4 * std::fabs(numeric));
      }
    }
    ++checked;
  }
  MESSAGE(checked, " op-table cases checked");
  CHECK(checked > 100);
}

TEST_CASE("max shares the gradient evenly among ties, as documented") {
  Tensor x = leaf({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  x.max({1}).sum().backward();
  CHECK(x.grad().to_doubles() == std::vector<double>{0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
  Tensor a = leaf({1, 2, 3}, {3}), b = leaf({3, 2, 1}, {3});
  maximum(a, b).sum().backward();
  CHECK(a.grad().to_doubles() == std::vector<double>{0, 0.5, 1});
  CHECK(b.grad().to_doubles() == std::vector<double>{1, 0.5, 0});
}

TEST_CASE("prod's gradient is the product of the others, zeros included") {
  Tensor x = leaf({2, 3, 4, 0, 5, 6, 0, 0, 7}, {3, 3});
  x.prod({1}).sum().backward();
  CHECK(x.grad().to_doubles() == std::vector<double>{12, 8, 6, 30, 0, 0, 0, 0, 0});
}

TEST_CASE("gradients stop at integer casts, indices and detach") {
  Tensor table = leaf(randoms(12, 3), {4, 3});
  Tensor ids = Tensor::from_vector<int32_t>({3, 0, 3}, {3}, std::nullopt, "CPU");
  table.embedding(ids).sum().backward();
  CHECK(table.grad().to_doubles() == std::vector<double>{1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 2});
  Tensor x = leaf({1.5, 2.5}, {2});
  CHECK_THROWS_WITH_AS(x.cast(dtypes::int32).cast(dtypes::float64).sum().backward(),
                       doctest::Contains("depends on no tensor that requires grad"), Error);
  CHECK_THROWS_WITH_AS(x.detach().sum().backward(),
                       doctest::Contains("depends on no tensor that requires grad"), Error);
  // Through a float cast the gradient flows, in the source's dtype.
  Tensor y = leaf({1, 2}, {2});
  (y.cast(dtypes::float32) * 3).sum().backward();
  CHECK(y.grad().dtype() == dtypes::float64);
  CHECK(y.grad().to_doubles() == std::vector<double>{3, 3});
}

TEST_CASE("backward accumulates, set_grad clears, a realized loss still differentiates") {
  Tensor x = leaf({1, 2, 3}, {3});
  Tensor loss = (x * x).sum();
  loss.realize();  // read first, differentiate after
  CHECK(loss.item<double>() == 14);
  loss.backward();
  (x * 10).sum().backward();
  CHECK(x.grad().to_doubles() == std::vector<double>{12, 14, 16});
  x.set_grad(Tensor());
  CHECK_FALSE(x.grad().defined());
  (x * x * x).sum().backward(f64({2}, {}));
  CHECK(x.grad().to_doubles() == std::vector<double>{6, 24, 54});
}

TEST_CASE("an explicit output gradient weighs the outputs") {
  Tensor x = leaf({1, 2, 3}, {3});
  (x * x).backward(f64({1, 0, -1}, {3}));
  CHECK(x.grad().to_doubles() == std::vector<double>{2, 0, -6});
}

TEST_CASE("inside a NoGradScope nothing is tracked and backward is an Error") {
  Tensor x = leaf({1, 2}, {2});
  Tensor y;
  {
    NoGradScope no_grad;
    y = x * 2;
    CHECK_THROWS_WITH_AS(x.sum().backward(), doctest::Contains("NoGradScope"), Error);
    // Assignments still write the tensor's own buffer.
    x.assign(x + 1).realize();
  }
  CHECK(x.to_doubles() == std::vector<double>{2, 3});
  CHECK_THROWS_WITH_AS(y.sum().backward(), doctest::Contains("depends on no tensor"), Error);
  (x * 3).sum().backward();
  CHECK(x.grad().to_doubles() == std::vector<double>{3, 3});
}

TEST_CASE("backward's errors name the problem") {
  Tensor x = leaf({1, 2}, {2});
  CHECK_THROWS_WITH_AS((x * 2).backward(), doctest::Contains("needs an explicit gradient"), Error);
  CHECK_THROWS_WITH_AS((x * 2).backward(f64({1, 2, 3}, {3})),
                       doctest::Contains("is not the tensor's"), Error);
  CHECK_THROWS_WITH_AS(Tensor::from_vector<int32_t>({1}, {1}, std::nullopt, "CPU").requires_grad_(),
                       doctest::Contains("only float tensors"), Error);
}

TEST_CASE("an MLP's gradients match the hand-derived backward pass") {
  // y = relu(x W1 + b1) W2, loss = mean((y - t)^2); x (4, 3), W1 (3, 5), W2 (5, 2).
  const int n = 4, d = 3, h = 5, o = 2;
  const auto xv = randoms(n * d, 1), w1v = randoms(d * h, 2), b1v = randoms(h, 3),
             w2v = randoms(h * o, 4), tv = randoms(n * o, 5);
  Tensor w1 = leaf(w1v, {d, h}), b1 = leaf(b1v, {h}), w2 = leaf(w2v, {h, o});
  Tensor y = (f64(xv, {n, d}).matmul(w1) + b1).relu().matmul(w2);
  ((y - f64(tv, {n, o})).square()).mean().backward();

  std::vector<double> a(n * h), z(n * h), yy(n * o), dy(n * o), da(n * h), dw1(d * h, 0), db1(h, 0),
      dw2(h * o, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < h; ++j) {
      double s = b1v[j];
      for (int k = 0; k < d; ++k) s += xv[i * d + k] * w1v[k * h + j];
      z[i * h + j] = s;
      a[i * h + j] = std::max(s, 0.0);
    }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < o; ++j) {
      double s = 0;
      for (int k = 0; k < h; ++k) s += a[i * h + k] * w2v[k * o + j];
      yy[i * o + j] = s;
      dy[i * o + j] = 2 * (s - tv[i * o + j]) / (n * o);
    }
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < h; ++k) {
      double s = 0;
      for (int j = 0; j < o; ++j) {
        s += dy[i * o + j] * w2v[k * o + j];
        dw2[k * o + j] += a[i * h + k] * dy[i * o + j];
      }
      da[i * h + k] = z[i * h + k] > 0 ? s : 0;
      db1[k] += da[i * h + k];
      for (int m = 0; m < d; ++m) dw1[m * h + k] += xv[i * d + m] * da[i * h + k];
    }
  check_close(w1.grad().to_doubles(), dw1, 1e-12, "W1");
  check_close(b1.grad().to_doubles(), db1, 1e-12, "b1");
  check_close(w2.grad().to_doubles(), dw2, 1e-12, "W2");
}

TEST_CASE("an attention block's gradients match the hand-derived backward pass") {
  // O = softmax(s (x Wq)(x Wk)^T) (x Wv), loss = sum(O * R); x (4, 6), W* (6, 3).
  const int n = 4, d = 6, k = 3;
  const double scale = 1 / std::sqrt(3.0);
  const auto xv = randoms(n * d, 11), qv = randoms(d * k, 12), kv = randoms(d * k, 13),
             vv = randoms(d * k, 14), rv = randoms(n * k, 15);
  Tensor wq = leaf(qv, {d, k}), wk = leaf(kv, {d, k}), wv = leaf(vv, {d, k});
  Tensor x = f64(xv, {n, d});
  Tensor att = (x.matmul(wq).matmul(x.matmul(wk).transpose()) * scale).softmax(-1);
  (att.matmul(x.matmul(wv)) * f64(rv, {n, k})).sum().backward();

  const auto mm = [](const std::vector<double>& a, const std::vector<double>& b, int r, int m,
                     int c, bool ta, bool tb) {  // (r x m) @ (m x c), operands maybe transposed
    std::vector<double> out(r * c, 0);
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j)
        for (int l = 0; l < m; ++l)
          out[i * c + j] += (ta ? a[l * r + i] : a[i * m + l]) * (tb ? b[j * m + l] : b[l * c + j]);
    return out;
  };
  const auto Q = mm(xv, qv, n, d, k, false, false), K = mm(xv, kv, n, d, k, false, false),
             V = mm(xv, vv, n, d, k, false, false);
  auto S = mm(Q, K, n, k, n, false, true);
  std::vector<double> P(n * n);
  for (int i = 0; i < n; ++i) {
    double mx = -1e300, sum = 0;
    for (int j = 0; j < n; ++j) mx = std::max(mx, S[i * n + j] * scale);
    for (int j = 0; j < n; ++j) sum += P[i * n + j] = std::exp(S[i * n + j] * scale - mx);
    for (int j = 0; j < n; ++j) P[i * n + j] /= sum;
  }
  const auto dP = mm(rv, V, n, k, n, false, true);  // dO = R
  const auto dV = mm(P, rv, n, n, k, true, false);
  std::vector<double> dS(n * n);
  for (int i = 0; i < n; ++i) {
    double row = 0;
    for (int j = 0; j < n; ++j) row += dP[i * n + j] * P[i * n + j];
    for (int j = 0; j < n; ++j) dS[i * n + j] = scale * P[i * n + j] * (dP[i * n + j] - row);
  }
  const auto dQ = mm(dS, K, n, n, k, false, false), dK = mm(dS, Q, n, n, k, true, false);
  check_close(wq.grad().to_doubles(), mm(xv, dQ, d, n, k, true, false), 1e-12, "Wq");
  check_close(wk.grad().to_doubles(), mm(xv, dK, d, n, k, true, false), 1e-12, "Wk");
  check_close(wv.grad().to_doubles(), mm(xv, dV, d, n, k, true, false), 1e-12, "Wv");
}
