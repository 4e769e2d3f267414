// Op-table cases for movement ops, indexing by data, matmul, creation and casts.
#include <bit>
#include <cmath>
#include <cstring>

#include "base/float16.h"
#include "op_case_builder.h"

namespace optable {
namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

void add_movement(Table& t) {
  for (DType dt : {f32, i32, f16, b8, u8}) {
    std::string d = to_string(dt);
    auto x = [&](Dims s) { return in(std::move(s), dt, t.next_layout(), 0, 9, true); };
    t.add(
        "reshape", d, {x({2, 3, 4})},
        [](const TV& v) {
          return v[0].reshape({6, -1});
        },
        [](const AV& v) {
          return ref::reshape(v[0], {6, 4});
        },
        dt);
    t.add(
        "reshape", d, {x({2, 3, 4})},
        [](const TV& v) {
          return v[0].reshape({4, 1, 6});
        },
        [](const AV& v) {
          return ref::reshape(v[0], {4, 1, 6});
        },
        dt);
    t.add(
        "permute", d, {x({2, 3, 4})},
        [](const TV& v) {
          return v[0].permute({2, 0, 1});
        },
        [](const AV& v) {
          return ref::permute(v[0], {2, 0, 1});
        },
        dt);
    t.add(
        "transpose", d, {x({3, 5})}, [](const TV& v) { return v[0].transpose(); },
        [](const AV& v) {
          return ref::permute(v[0], {1, 0});
        },
        dt);
    t.add(
        "expand", d, {x({3, 1})},
        [](const TV& v) {
          return v[0].expand({2, 3, 5});
        },
        [](const AV& v) {
          return ref::expand(v[0], {2, 3, 5});
        },
        dt);
    t.add(
        "pad", d, {x({2, 3})},
        [](const TV& v) {
          return v[0].pad({{1, 2}, {0, 1}});
        },
        [](const AV& v) {
          return ref::pad(v[0], {{1, 2}, {0, 1}}, 0);
        },
        dt);
    double fill = is_bool(dt) ? 1 : 5;
    t.add(
        "pad_value", d, {x({2, 3})},
        [fill](const TV& v) {
          return v[0].pad({{0, 1}, {2, 0}}, fill);
        },
        [fill](const AV& v) {
          return ref::pad(v[0], {{0, 1}, {2, 0}}, fill);
        },
        dt);
    t.add(
        "shrink", d, {x({4, 5})},
        [](const TV& v) {
          return v[0].shrink({{1, 3}, {0, 4}});
        },
        [](const AV& v) {
          return ref::shrink(v[0], {{1, 3}, {0, 4}});
        },
        dt);
    t.add(
        "slice", d, {x({4, 5, 3})},
        [](const TV& v) {
          return v[0].slice({{-3, -1}, {1}});
        },
        [](const AV& v) {
          return ref::shrink(v[0], {{1, 3}, {1, 5}, {0, 3}});
        },
        dt);
    t.add(
        "flip", d, {x({3, 4})}, [](const TV& v) { return v[0].flip({0}); },
        [](const AV& v) { return ref::flip(v[0], {0}); }, dt);
    t.add(
        "flip", d, {x({2, 3, 4})}, [](const TV& v) { return v[0].flip({}); },
        [](const AV& v) { return ref::flip(v[0], {}); }, dt);
    t.add(
        "cat", d, {x({2, 3}), x({0, 3}), x({4, 3})}, [](const TV& v) { return cat(v, 0); },
        [](const AV& v) { return ref::cat(v, 0); }, dt);
    t.add(
        "cat", d, {x({2, 1}), x({2, 4})}, [](const TV& v) { return cat(v, -1); },
        [](const AV& v) { return ref::cat(v, 1); }, dt);
    t.add(
        "stack", d, {x({2, 3}), x({2, 3})}, [](const TV& v) { return stack(v, 1); },
        [](const AV& v) {
          return ref::cat({ref::reshape(v[0], {2, 1, 3}), ref::reshape(v[1], {2, 1, 3})}, 1);
        },
        dt);
    t.add(
        "squeeze", d, {x({1, 3, 1})}, [](const TV& v) { return v[0].squeeze(); },
        [](const AV& v) { return ref::reshape(v[0], {3}); }, dt);
    t.add(
        "unsqueeze", d, {x({3, 2})}, [](const TV& v) { return v[0].unsqueeze(1); },
        [](const AV& v) {
          return ref::reshape(v[0], {3, 1, 2});
        },
        dt);
    t.add(
        "flatten", d, {x({2, 3, 2})}, [](const TV& v) { return v[0].flatten(1); },
        [](const AV& v) {
          return ref::reshape(v[0], {2, 6});
        },
        dt);
    t.add(
        "repeat", d, {x({2, 3})},
        [](const TV& v) {
          return v[0].repeat({2, 1, 3});
        },
        [](const AV& v) {
          return ref::repeat(v[0], {2, 1, 3});
        },
        dt);
    t.add(
        "repeat_interleave", d, {x({2, 3})},
        [](const TV& v) { return v[0].repeat_interleave(2, 0); },
        [](const AV& v) {
          return ref::reshape(ref::expand(ref::reshape(v[0], {2, 1, 3}), {2, 2, 3}), {4, 3});
        },
        dt);
    for (int64_t k : {-1, 0, 2}) {
      t.add(
          "triu", d + fmt::format("/k{}", k), {x({4, 5})},
          [k](const TV& v) { return v[0].triu(k); },
          [k](const AV& v) { return ref::triangle(v[0], k, true); }, dt);
      t.add(
          "tril", d + fmt::format("/k{}", k), {x({2, 3, 4})},
          [k](const TV& v) { return v[0].tril(k); },
          [k](const AV& v) { return ref::triangle(v[0], k, false); }, dt);
    }
  }
}

void add_indexing(Table& t) {
  for (DType dt : {f32, i32, f16}) {
    std::string d = to_string(dt);
    t.add(
        "gather", d + "/axis1",
        {in({4, 5}, dt, t.next_layout()), in({4, 3}, i32, L::Contiguous, 0, 4)},
        [](const TV& v) { return v[0].gather(1, v[1]); },
        [](const AV& v) { return ref::gather(v[0], 1, v[1]); }, dt);
    t.add(
        "gather", d + "/axis0",
        {in({5, 3, 2}, dt, t.next_layout()), in({2, 3, 2}, i32, L::Flipped, 0, 4)},
        [](const TV& v) { return v[0].gather(0, v[1]); },
        [](const AV& v) { return ref::gather(v[0], 0, v[1]); }, dt);
    t.add(
        "index_select", d, {in({4, 6}, dt, t.next_layout()), in({5}, i32, L::Contiguous, 0, 5)},
        [](const TV& v) { return v[0].index_select(1, v[1]); },
        [](const AV& v) {
          A idx = ref::expand(ref::reshape(v[1], {1, 5}), {4, 5});
          return ref::gather(v[0], 1, idx);
        },
        dt);
    t.add(
        "embedding", d, {in({10, 8}, dt, t.next_layout()), in({2, 3}, i32, L::Contiguous, 0, 9)},
        [](const TV& v) { return v[0].embedding(v[1]); },
        [](const AV& v) {
          // out[i, j, c] = table[ids[i, j], c]
          A r{{2, 3, 8}, {}};
          for (int64_t i = 0; i < 2; ++i)
            for (int64_t j = 0; j < 3; ++j)
              for (int64_t c = 0; c < 8; ++c)
                r.v.push_back(v[0].v[static_cast<int64_t>(v[1].v[i * 3 + j]) * 8 + c]);
          return r;
        },
        dt);
  }
  t.add(
      "one_hot", "int32", {in({2, 3}, i32, L::Permuted, 0, 5)},
      [](const TV& v) { return v[0].one_hot(6); },
      [](const AV& v) {
        A r{{2, 3, 6}, {}};
        for (double x : v[0].v)
          for (int64_t c = 0; c < 6; ++c) r.v.push_back(static_cast<int64_t>(x) == c ? 1 : 0);
        return r;
      },
      i32);
}

void add_matmul(Table& t) {
  auto mm = [](const TV& v) { return v[0].matmul(v[1]); };
  auto mm_ref = [](const AV& v) { return ref::matmul(v[0], v[1]); };
  const std::pair<Dims, Dims> shapes[] = {
      {{2, 3}, {3, 4}}, {{4}, {4, 5}},       {{2, 3}, {3}},
      {{5}, {5}},       {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {5, 4, 2}},
      {{1, 1}, {1, 1}}, {{3, 0}, {0, 2}},    {{16, 16}, {16, 16}}};
  for (const auto& [a, b] : shapes)
    t.add("matmul", "float32", {in(a, f32, t.next_layout()), in(b, f32, t.next_layout())}, mm,
          mm_ref, f32);
  t.add("matmul", "float16",
        {in({8, 16}, f16, L::Permuted, -1, 1), in({16, 8}, f16, L::Contiguous, -1, 1)}, mm, mm_ref,
        f16, Tolerance{1e-2, 1e-2});
  t.add("matmul", "bfloat16",
        {in({4, 8}, bf16, L::Contiguous, -1, 1), in({8, 3}, bf16, L::Flipped, -1, 1)}, mm, mm_ref,
        bf16, Tolerance{3e-2, 5e-2});
  t.add("matmul", "int32",
        {in({3, 4}, i32, L::Shrunk, -9, 9), in({4, 2}, i32, L::Contiguous, -9, 9)}, mm, mm_ref,
        i32);
  t.add("matmul", "int8",
        {in({3, 4}, i8, L::Contiguous, -9, 9), in({4, 2}, i8, L::Contiguous, -9, 9)}, mm, mm_ref,
        i32);
  t.add("matmul", "float16@float32", {in({3, 4}, f16), in({4, 2}, f32)}, mm, mm_ref, f32);
  t.add("matmul", "float32/long_inner",
        {in({2, 4096}, f32, L::Contiguous, -1, 1), in({4096, 3}, f32, L::Permuted, -1, 1)}, mm,
        mm_ref, f32, Tolerance{1e-4, 1e-4});
  t.add("matmul", "float32/gemm64",
        {in({64, 48}, f32, L::Contiguous, -1, 1), in({48, 80}, f32, L::Contiguous, -1, 1)}, mm,
        mm_ref, f32, Tolerance{1e-4, 1e-4});
  t.add(
      "linear", "float32", {in({4, 3}, f32, L::Flipped), in({6, 3}, f32), in({6}, f32)},
      [](const TV& v) { return v[0].linear(v[1], v[2]); },
      [](const AV& v) {
        return ref::zip(ref::matmul(v[0], ref::permute(v[1], {1, 0})), v[2], std::plus<>());
      },
      f32);
  t.add(
      "linear", "float32/no_bias", {in({2, 4, 3}, f32), in({5, 3}, f32, L::Permuted)},
      [](const TV& v) { return v[0].linear(v[1]); },
      [](const AV& v) {
        return ref::matmul(v[0], ref::permute(v[1], {1, 0}));
      },
      f32);
}

double bits_as_float(double i) { return std::bit_cast<float>(static_cast<int32_t>(i)); }
double float_bits(double f) { return std::bit_cast<int32_t>(static_cast<float>(f)); }

void add_creation_and_casts(Table& t) {
  auto fixed = [](Dims d, std::function<double(int64_t)> f) {
    return [d, f](const AV&) {
      A r{d, {}};
      for (int64_t i = 0; i < r.numel(); ++i) r.v.push_back(f(i));
      return r;
    };
  };
  t.add(
      "full", "float32", {},
      [](const TV&) {
        return Tensor::full({2, 3}, 1.5);
      },
      fixed({2, 3}, [](int64_t) { return 1.5; }), f32);
  t.add(
      "zeros", "int32", {}, [](const TV&) { return Tensor::zeros({4}, i32); },
      fixed({4}, [](int64_t) { return 0.0; }), i32);
  t.add(
      "ones", "float16", {},
      [](const TV&) {
        return Tensor::ones({2, 2}, f16);
      },
      fixed({2, 2}, [](int64_t) { return 1.0; }), f16);
  t.add(
      "full", "bool/scalar", {}, [](const TV&) { return Tensor::full({}, true); },
      fixed({}, [](int64_t) { return 1.0; }), b8);
  t.add(
      "arange", "int32", {}, [](const TV&) { return Tensor::arange(10); },
      fixed({10}, [](int64_t i) { return double(i); }), i32);
  t.add(
      "arange", "float32/step", {}, [](const TV&) { return Tensor::arange(1.0, -1.0, -0.25); },
      fixed({8}, [](int64_t i) { return 1.0 - 0.25 * double(i); }), f32);
  t.add(
      "eye", "float32", {}, [](const TV&) { return Tensor::eye(3, 4); },
      fixed({3, 4}, [](int64_t i) { return i / 4 == i % 4 ? 1.0 : 0.0; }), f32);
  t.add(
      "full_plus_input", "float32", {in({3, 4}, f32, L::Permuted)},
      [](const TV& v) {
        return Tensor::full({3, 4}, 2.0) * v[0];
      },
      [](const AV& v) { return ref::map(v[0], [](double x) { return 2 * x; }); }, f32);

  struct CastCase {
    DType from, to;
    double lo, hi;
    double (*r)(double);
  };
  const CastCase casts[] = {
      {f32, i32, -100, 100, [](double x) { return std::trunc(x); }},
      {f32, f16, -100, 100,
       [](double x) { return double(ugrad::half_to_float(ugrad::float_to_half(float(x)))); }},
      {f32, bf16, -100, 100,
       [](double x) { return double(ugrad::bf16_to_float(ugrad::float_to_bf16(float(x)))); }},
      {f16, f32, -100, 100, [](double x) { return x; }},
      {i32, f32, -1000, 1000, [](double x) { return x; }},
      {f32, b8, -2, 2, [](double x) { return x != 0 ? 1.0 : 0.0; }},
      {b8, f32, 0, 1, [](double x) { return x; }},
      {u8, i8, 0, 255, [](double x) { return x; }},  // wraps (the runner wraps int references)
      {i32, u8, -300, 300, [](double x) { return x; }},
      {i8, i64, -100, 100, [](double x) { return x; }},
      {f64, f32, -100, 100, [](double x) { return double(float(x)); }},
  };
  for (const CastCase& c : casts) {
    DType to = c.to;
    auto r = c.r;
    bool integral = c.from == f32 && c.to == b8;
    t.add(
        "cast", to_string(c.from) + "->" + to_string(c.to),
        {in({3, 4}, c.from, t.next_layout(), c.lo, c.hi, integral)},
        [to](const TV& v) { return v[0].cast(to); }, [r](const AV& v) { return ref::map(v[0], r); },
        to, Tolerance{});
  }
  t.add(
      "bitcast", "float32->int32", {in({3, 4}, f32, L::Flipped)},
      [](const TV& v) { return v[0].bitcast(i32); },
      [](const AV& v) { return ref::map(v[0], float_bits); }, i32);
  t.add(
      "bitcast", "int32->float32", {in({3, 4}, i32, L::Contiguous, 1 << 23, 1 << 30)},
      [](const TV& v) { return v[0].bitcast(f32); },
      [](const AV& v) { return ref::map(v[0], bits_as_float); }, f32, Tolerance{});
  t.add(
      "bitcast", "float16->int16", {in({3, 4}, f16)},
      [](const TV& v) { return v[0].bitcast(dtypes::int16); },
      [](const AV& v) {
        return ref::map(v[0],
                        [](double x) { return double(int16_t(ugrad::float_to_half(float(x)))); });
      },
      dtypes::int16);
}

}  // namespace

void add_movement_cases(Table& t) {
  add_movement(t);
  add_indexing(t);
  add_matmul(t);
  add_creation_and_casts(t);
}

}  // namespace optable
