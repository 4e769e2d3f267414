// Op-table cases for reductions (over every axis pattern, keepdim, size-0 axes and 100k-element
// reductions) and the ops composed from them (softmax, argmax, cumsum).
#include <cmath>

#include "op_case_builder.h"

namespace optable {
namespace {

A max_ref(const A& a, std::vector<int64_t> axes, bool keepdim) {
  return ref::reduce(a, std::move(axes), keepdim, -INFINITY,
                     [](double x, double y) { return std::max(x, y); });
}
A min_ref(const A& a, std::vector<int64_t> axes, bool keepdim) {
  return ref::reduce(a, std::move(axes), keepdim, INFINITY,
                     [](double x, double y) { return std::min(x, y); });
}
A sum_ref(const A& a, std::vector<int64_t> axes, bool keepdim) {
  return ref::reduce(a, std::move(axes), keepdim, 0, std::plus<>());
}
A prod_ref(const A& a, std::vector<int64_t> axes, bool keepdim) {
  return ref::reduce(a, std::move(axes), keepdim, 1, std::multiplies<>());
}

// Axis patterns over a rank-3 input.
const std::pair<std::vector<int64_t>, bool> kAxes[] = {
    {{}, false}, {{0}, false}, {{1}, true}, {{-1}, false}, {{0, 2}, true}, {{2, 0, 1}, false}};

using TensorReduce = T (*)(const T&, std::vector<int64_t>, bool);
using RefReduce = A (*)(const A&, std::vector<int64_t>, bool);

struct ReduceOp {
  const char* name;
  TensorReduce f;
  RefReduce r;
  std::vector<std::pair<DType, DType>> dtypes;  // input, output
  double lo, hi;
};

const ReduceOp kReduce[] = {
    {"sum",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.sum(a, k); },
     sum_ref,
     {{f32, f32},
      {f16, f16},
      {bf16, bf16},
      {i32, i32},
      {i8, i32},
      {u8, dtypes::uint32},
      {b8, i32},
      {i64, i64}},
     -9,
     9},
    {"prod",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.prod(a, k); },
     prod_ref,
     {{f32, f32}, {i32, i32}},
     -1.6,
     1.6},
    {"max",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.max(a, k); },
     max_ref,
     {{f32, f32}, {f16, f16}, {i32, i32}, {i8, i8}, {u8, u8}, {b8, b8}},
     -9,
     9},
    {"min",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.min(a, k); },
     min_ref,
     {{f32, f32}, {f16, f16}, {i32, i32}, {i8, i8}, {u8, u8}, {b8, b8}},
     -9,
     9},
    {"mean",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.mean(a, k); },
     ref::mean,
     {{f32, f32}, {f16, f16}, {i32, f32}},
     -9,
     9},
    {"var",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.var(a, k); },
     [](const A& x, std::vector<int64_t> a, bool k) { return ref::var(x, a, k, 1); },
     {{f32, f32}, {f16, f16}},
     -3,
     3},
    {"var_population",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.var(a, k, 0); },
     [](const A& x, std::vector<int64_t> a, bool k) { return ref::var(x, a, k, 0); },
     {{f32, f32}},
     -3,
     3},
    {"std",
     [](const T& x, std::vector<int64_t> a, bool k) { return x.std(a, k); },
     [](const A& x, std::vector<int64_t> a, bool k) {
       return ref::map(ref::var(x, a, k, 1), [](double v) { return std::sqrt(v); });
     },
     {{f32, f32}},
     -3,
     3},
};

void add_reductions(Table& t) {
  for (const ReduceOp& op : kReduce) {
    for (auto [dt, out] : op.dtypes) {
      bool prod_int = std::string(op.name) == "prod" && is_int(dt);
      double lo = is_unsigned(dt) ? 0 : op.lo, hi = prod_int ? 2 : op.hi;
      if (prod_int) lo = -2;
      for (const auto& [axes, keepdim] : kAxes) {
        if (dt != op.dtypes.front().first && axes.size() == 3) continue;
        auto f = op.f;
        auto r = op.r;
        std::vector<int64_t> ax = axes;
        bool kd = keepdim;
        Dims shape = prod_int ? Dims{2, 3, 2} : Dims{3, 4, 5};
        t.add(
            op.name, fmt::format("{}/axes{}{}", to_string(dt), dims_text(ax), kd ? "keep" : ""),
            {in(shape, dt, t.next_layout(), lo, hi)},
            [f, ax, kd](const TV& x) { return f(x[0], ax, kd); },
            [r, ax, kd](const AV& x) { return r(x[0], ax, kd); }, out);
      }
    }
  }
  // Size 0 and size 1: an empty sum is 0, an empty product 1; reducing a unit axis is a copy.
  t.add(
      "sum", "float32/empty_axis", {in({0, 3}, f32)}, [](const TV& x) { return x[0].sum({0}); },
      [](const AV& x) { return sum_ref(x[0], {0}, false); }, f32);
  t.add(
      "sum", "float32/empty_rows", {in({4, 0}, f32)},
      [](const TV& x) { return x[0].sum({1}, true); },
      [](const AV& x) { return sum_ref(x[0], {1}, true); }, f32);
  t.add(
      "prod", "float32/empty_axis", {in({3, 0}, f32)}, [](const TV& x) { return x[0].prod({1}); },
      [](const AV& x) { return prod_ref(x[0], {1}, false); }, f32);
  t.add(
      "max", "float32/unit_axes", {in({1, 5, 1}, f32, L::Expanded)},
      [](const TV& x) {
        return x[0].max({0, 2});
      },
      [](const AV& x) {
        return max_ref(x[0], {0, 2}, false);
      },
      f32);
  t.add(
      "sum", "float32/scalar", {in({}, f32)}, [](const TV& x) { return x[0].sum(); },
      [](const AV& x) { return sum_ref(x[0], {}, false); }, f32);
  // Long reductions.
  t.add(
      "sum", "float32/long", {in({100000}, f32, L::Contiguous, 0, 1)},
      [](const TV& x) { return x[0].sum(); }, [](const AV& x) { return sum_ref(x[0], {}, false); },
      f32, Tolerance{1e-4, 1e-3});
  t.add(
      "sum", "int8/long", {in({100000}, i8, L::Contiguous, -100, 100)},
      [](const TV& x) { return x[0].sum(); }, [](const AV& x) { return sum_ref(x[0], {}, false); },
      i32);
  t.add(
      "sum", "float16/long_rows", {in({4, 25000}, f16, L::Flipped, 0, 1)},
      [](const TV& x) { return x[0].sum({1}); },
      [](const AV& x) { return sum_ref(x[0], {1}, false); }, f16);
  t.add(
      "max", "float32/long", {in({100000}, f32, L::Shrunk)}, [](const TV& x) { return x[0].max(); },
      [](const AV& x) { return max_ref(x[0], {}, false); }, f32);
  t.add(
      "mean", "float32/long_columns", {in({50000, 2}, f32, L::Permuted)},
      [](const TV& x) { return x[0].mean({0}); },
      [](const AV& x) { return ref::mean(x[0], {0}, false); }, f32, Tolerance{1e-4, 1e-4});

  // argmax / argmin (ties resolve to the first index: int inputs have many ties)
  for (DType dt : {f32, i32, f16, u8}) {
    double lo = is_unsigned(dt) ? 0 : -4;
    for (int64_t axis : {0, 1, -1}) {
      t.add(
          "argmax", fmt::format("{}/axis{}", to_string(dt), axis),
          {in({3, 4, 5}, dt, t.next_layout(), lo, 4, true)},
          [axis](const TV& x) { return x[0].argmax(axis); },
          [axis](const AV& x) { return ref::argmax(x[0], axis, false); }, i32);
      t.add(
          "argmin", fmt::format("{}/axis{}", to_string(dt), axis),
          {in({3, 4, 5}, dt, t.next_layout(), lo, 4, true)},
          [axis](const TV& x) { return x[0].argmin(axis, true); },
          [axis](const AV& x) { return ref::argmax(x[0], axis, true, true); }, i32);
    }
  }
  t.add(
      "argmax", "float32/flat", {in({6, 7}, f32, L::Flipped)},
      [](const TV& x) { return x[0].argmax(); },
      [](const AV& x) { return ref::argmax(ref::reshape(x[0], {42}), 0, false); }, i32);
  t.add(
      "argmax", "float32/long", {in({30000}, f32)}, [](const TV& x) { return x[0].argmax(); },
      [](const AV& x) { return ref::argmax(x[0], 0, false); }, i32);

  // softmax family
  for (DType dt : {f32, f16}) {
    for (int64_t axis : {-1, 0, 1}) {
      std::string d = fmt::format("{}/axis{}", to_string(dt), axis);
      t.add(
          "softmax", d, {in({3, 4, 5}, dt, t.next_layout(), -5, 5)},
          [axis](const TV& x) { return x[0].softmax(axis); },
          [axis](const AV& x) { return ref::softmax(x[0], axis, false); }, dt);
      t.add(
          "log_softmax", d, {in({3, 4, 5}, dt, t.next_layout(), -5, 5)},
          [axis](const TV& x) { return x[0].log_softmax(axis); },
          [axis](const AV& x) { return ref::softmax(x[0], axis, true); }, dt);
      t.add(
          "logsumexp", d, {in({3, 4, 5}, dt, t.next_layout(), -5, 5)},
          [axis](const TV& x) { return x[0].logsumexp(axis); },
          [axis](const AV& x) { return ref::logsumexp(x[0], axis, false); }, dt);
    }
  }
  t.add(
      "softmax", "float32/wide_logits", {in({2, 1000}, f32, L::Contiguous, -80, 80)},
      [](const TV& x) { return x[0].softmax(); },
      [](const AV& x) { return ref::softmax(x[0], -1, false); }, f32, Tolerance{1e-4, 1e-6});
  t.add(
      "logsumexp", "float32/keepdim", {in({4, 6}, f32, L::Padded)},
      [](const TV& x) { return x[0].logsumexp(0, true); },
      [](const AV& x) {
        A r = ref::logsumexp(x[0], 0, false);
        r.dims.insert(r.dims.begin(), 1);
        return r;
      },
      f32);

  // cumsum
  for (DType dt : {f32, i32, f16}) {
    DType out = dt == i32 ? i32 : dt;
    for (int64_t axis : {0, 1, -1})
      t.add(
          "cumsum", fmt::format("{}/axis{}", to_string(dt), axis),
          {in({3, 4, 5}, dt, t.next_layout(), -5, 5)},
          [axis](const TV& x) { return x[0].cumsum(axis); },
          [axis](const AV& x) { return ref::cumsum(x[0], axis); }, out);
  }
  t.add(
      "cumsum", "int8/to_int32", {in({50}, i8, L::Contiguous, -100, 100)},
      [](const TV& x) { return x[0].cumsum(); }, [](const AV& x) { return ref::cumsum(x[0], 0); },
      i32);
  t.add(
      "cumsum", "float32/long", {in({600}, f32, L::Contiguous, 0, 1)},
      [](const TV& x) { return x[0].cumsum(); }, [](const AV& x) { return ref::cumsum(x[0], 0); },
      f32, Tolerance{1e-4, 1e-4});
}

}  // namespace

void add_reduce_cases(Table& t) { add_reductions(t); }

}  // namespace optable
