// The op table's cases: elementwise, reductions, movement, indexing, matmul, creation and casts,
// over dtypes, shapes (broadcasting, size 0 and 1, long reductions) and input layouts.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fmt/format.h>

#include "base/float16.h"
#include "op_case_builder.h"
#include "test/byte_lut_reference.h"

using namespace ugrad;

namespace optable {
namespace {

// ---- elementwise ----

struct UnaryOp {
  const char* name;
  T (*f)(const T&);
  double (*r)(double);
  double lo, hi;
};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

const UnaryOp kFloatUnary[] = {
    {"neg", [](const T& x) { return -x; }, [](double x) { return -x; }, -3, 3},
    {"exp", [](const T& x) { return x.exp(); }, [](double x) { return std::exp(x); }, -4, 4},
    {"exp2", [](const T& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -4, 4},
    {"log", [](const T& x) { return x.log(); }, [](double x) { return std::log(x); }, 0.1, 10},
    {"log2", [](const T& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0.1, 10},
    {"sqrt", [](const T& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0, 10},
    {"rsqrt", [](const T& x) { return x.rsqrt(); }, [](double x) { return 1 / std::sqrt(x); }, 0.1,
     10},
    {"reciprocal", [](const T& x) { return x.reciprocal(); }, [](double x) { return 1 / x; }, 0.2,
     5},
    {"sin", [](const T& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -3, 3},
    {"cos", [](const T& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -3, 3},
    {"tanh", [](const T& x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -3, 3},
    {"sigmoid", [](const T& x) { return x.sigmoid(); }, sigmoid_ref, -6, 6},
    {"silu", [](const T& x) { return x.silu(); }, [](double x) { return x * sigmoid_ref(x); }, -4,
     4},
    {"gelu", [](const T& x) { return x.gelu(); }, gelu_ref, -3, 3},
    {"relu", [](const T& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, -3, 3},
    {"abs", [](const T& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -3, 3},
    {"square", [](const T& x) { return x.square(); }, [](double x) { return x * x; }, -3, 3},
    {"trunc", [](const T& x) { return x.trunc(); }, [](double x) { return std::trunc(x); }, -3, 3},
    {"sign", [](const T& x) { return x.sign(); },
     [](double x) { return x > 0   ? 1.0
                           : x < 0 ? -1.0
                                   : 0.0; }, -3, 3},
    {"clip", [](const T& x) { return x.clip(-1, 1.5); },
     [](double x) { return std::clamp(x, -1.0, 1.5); }, -3, 3},
    {"pow_int", [](const T& x) { return x.pow(3); }, [](double x) { return x * x * x; }, -2, 2},
    {"pow_frac", [](const T& x) { return x.pow(1.7); }, [](double x) { return std::pow(x, 1.7); },
     0, 3},
};

const UnaryOp kIntUnary[] = {
    {"neg", [](const T& x) { return -x; }, [](double x) { return -x; }, -20, 20},
    {"abs", [](const T& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -20, 20},
    {"relu", [](const T& x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); }, -20,
     20},
    {"square", [](const T& x) { return x.square(); }, [](double x) { return x * x; }, -9, 9},
    {"sign", [](const T& x) { return x.sign(); },
     [](double x) { return x > 0   ? 1.0
                           : x < 0 ? -1.0
                                   : 0.0; }, -3, 3},
    {"bitwise_not", [](const T& x) { return x.bitwise_not(); }, [](double x) { return -x - 1; },
     -20, 20},
    {"clip", [](const T& x) { return x.clip(-3, 5); },
     [](double x) { return std::clamp(x, -3.0, 5.0); }, -9, 9},
    {"pow_int", [](const T& x) { return x.pow(2); }, [](double x) { return x * x; }, -9, 9},
};

void add_unary(Table& t) {
  for (const UnaryOp& u : kFloatUnary) {
    auto f = u.f;
    auto r = u.r;
    auto run = [f](const TV& x) { return f(x[0]); };
    auto ref = [r](const AV& x) { return ref::map(x[0], r); };
    for (Dims d : {Dims{3, 4}, Dims{2, 3, 5}, Dims{0, 3}, Dims{1, 1}, Dims{}})
      t.add(u.name, "float32", {in(d, f32, t.next_layout(), u.lo, u.hi)}, run, ref, f32);
    for (DType dt : {f16, bf16})
      for (Dims d : {Dims{4, 6}, Dims{2, 3, 5}})
        t.add(u.name, to_string(dt), {in(d, dt, t.next_layout(), u.lo, u.hi)}, run, ref, dt);
    t.add(u.name, "float64", {in({5, 7}, f64, t.next_layout(), u.lo, u.hi)}, run, ref, f64);
  }
  for (const UnaryOp& u : kIntUnary) {
    auto f = u.f;
    auto r = u.r;
    auto run = [f](const TV& x) { return f(x[0]); };
    auto ref = [r](const AV& x) { return ref::map(x[0], r); };
    for (DType dt : {i32, i8, i64})
      for (Dims d : {Dims{3, 4}, Dims{2, 1, 3}})
        t.add(u.name, to_string(dt), {in(d, dt, t.next_layout(), u.lo, u.hi)}, run, ref, dt);
  }
  // Transcendentals of ints compute in float32.
  t.add(
      "exp", "int32", {in({3, 4}, i32, L::Contiguous, -4, 4)},
      [](const TV& x) { return x[0].exp(); },
      [](const AV& x) { return ref::map(x[0], [](double v) { return std::exp(v); }); }, f32);
  t.add(
      "sqrt", "uint8", {in({3, 4}, u8, L::Permuted, 0, 200)},
      [](const TV& x) { return x[0].sqrt(); },
      [](const AV& x) { return ref::map(x[0], [](double v) { return std::sqrt(v); }); }, f32);
  t.add(
      "logical_not", "bool", {in({3, 4}, b8, L::Flipped)},
      [](const TV& x) { return x[0].logical_not(); },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v == 0 ? 1.0 : 0.0; }); }, b8);
  t.add(
      "bitwise_not", "uint8", {in({3, 4}, u8, L::Shrunk, 0, 255)},
      [](const TV& x) { return x[0].bitwise_not(); },
      [](const AV& x) { return ref::map(x[0], [](double v) { return 255 - v; }); }, u8);
  // Each byte of a word through a 16-entry table; shapes wide enough for vector lanes. Fixed
  // layouts: taking from the rotation would move every later case's layout.
  for (auto [d, layout] :
       {std::pair{Dims{3, 4}, L::Contiguous}, std::pair{Dims{4, 64}, L::Permuted},
        std::pair{Dims{2, 3, 40}, L::Flipped}})
    t.add(
        "byte_lut", "int32", {in(d, i32, layout, -2147483648.0, 2147483647.0)},
        [](const TV& x) {
          std::array<uint8_t, 16> table{};
          const std::vector<int64_t> v = test::byte_lut_table();
          std::copy(v.begin(), v.end(), table.begin());
          return byte_lut(x[0], table);
        },
        [](const AV& x) {
          return ref::map(x[0], [](double v) {
            const auto w = static_cast<uint32_t>(static_cast<int64_t>(v));
            return double(
                static_cast<int32_t>(test::byte_lut_reference(w, test::byte_lut_table())));
          });
        },
        i32);
}

struct BinaryOp {
  const char* name;
  T (*f)(const T&, const T&);
  double (*r)(double, double);
  std::vector<DType> dtypes;
  double lo, hi, blo, bhi;
  bool integral;
  bool to_bool;  // comparisons
};

double c_mod(double a, double b) { return std::fmod(a, b); }

// The bytes of two int32 words, a's unsigned, b's signed, multiplied pairwise and summed.
double dot4_ref(double a, double b) {
  const auto x = static_cast<uint32_t>(static_cast<int64_t>(a)),
             y = static_cast<uint32_t>(static_cast<int64_t>(b));
  double sum = 0;
  for (int i = 0; i < 32; i += 8)
    sum += double((x >> i) & 255) * double(static_cast<int8_t>((y >> i) & 255));
  return sum;
}

const BinaryOp kBinary[] = {
    {"add",
     [](const T& a, const T& b) { return a + b; },
     [](double a, double b) { return a + b; },
     {f32, f16, bf16, f64, i32, i8, u8, i64},
     -9,
     9,
     -9,
     9,
     false,
     false},
    {"sub",
     [](const T& a, const T& b) { return a - b; },
     [](double a, double b) { return a - b; },
     {f32, f16, bf16, i32, i8, u8},
     -9,
     9,
     -9,
     9,
     false,
     false},
    {"mul",
     [](const T& a, const T& b) { return a * b; },
     [](double a, double b) { return a * b; },
     {f32, f16, bf16, i32, i8, u8},
     -9,
     9,
     -9,
     9,
     false,
     false},
    {"div",
     [](const T& a, const T& b) { return a / b; },
     [](double a, double b) { return a / b; },
     {f32, f16, f64},
     -9,
     9,
     0.5,
     4,
     false,
     false},
    {"maximum",
     [](const T& a, const T& b) { return maximum(a, b); },
     [](double a, double b) { return std::max(a, b); },
     {f32, f16, i32, i8, u8},
     -9,
     9,
     -9,
     9,
     true,
     false},
    {"minimum",
     [](const T& a, const T& b) { return minimum(a, b); },
     [](double a, double b) { return std::min(a, b); },
     {f32, f16, i32, i8, u8},
     -9,
     9,
     -9,
     9,
     true,
     false},
    {"pow",
     [](const T& a, const T& b) { return pow(a, b); },
     [](double a, double b) { return std::pow(a, b); },
     {f32, f16},
     0.1,
     3,
     -2,
     2,
     false,
     false},
    {"pow_negbase",
     [](const T& a, const T& b) { return pow(a, b); },
     [](double a, double b) { return std::pow(a, b); },
     {f32},
     -3,
     3,
     -3,
     3,
     true,
     false},
    {"lt",
     [](const T& a, const T& b) { return a < b; },
     [](double a, double b) { return double(a < b); },
     {f32, f16, i32, u8},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"le",
     [](const T& a, const T& b) { return a <= b; },
     [](double a, double b) { return double(a <= b); },
     {f32, i32},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"gt",
     [](const T& a, const T& b) { return a > b; },
     [](double a, double b) { return double(a > b); },
     {f32, i32},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"ge",
     [](const T& a, const T& b) { return a >= b; },
     [](double a, double b) { return double(a >= b); },
     {f32, i8},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"eq",
     [](const T& a, const T& b) { return a.eq(b); },
     [](double a, double b) { return double(a == b); },
     {f32, f16, i32, b8},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"ne",
     [](const T& a, const T& b) { return a.ne(b); },
     [](double a, double b) { return double(a != b); },
     {f32, i32, b8},
     -2,
     2,
     -2,
     2,
     true,
     true},
    {"dot4",
     [](const T& a, const T& b) { return dot4(a, b); },
     dot4_ref,
     {i32},
     -2147483648.0,
     2147483647.0,
     -2147483648.0,
     2147483647.0,
     true,
     false},
    {"idiv",
     [](const T& a, const T& b) { return idiv(a, b); },
     [](double a, double b) { return std::trunc(a / b); },
     {i32, i8, i64},
     -20,
     20,
     1,
     5,
     true,
     false},
    {"idiv_negdivisor",
     [](const T& a, const T& b) { return idiv(a, b); },
     [](double a, double b) { return std::trunc(a / b); },
     {i32},
     -20,
     20,
     -5,
     -1,
     true,
     false},
    {"mod",
     [](const T& a, const T& b) { return mod(a, b); },
     c_mod,
     {i32, i8},
     -20,
     20,
     1,
     5,
     true,
     false},
    {"floordiv",
     [](const T& a, const T& b) { return floordiv(a, b); },
     [](double a, double b) { return std::floor(a / b); },
     {i32},
     -20,
     20,
     1,
     5,
     true,
     false},
    {"floordiv_negdivisor",
     [](const T& a, const T& b) { return floordiv(a, b); },
     [](double a, double b) { return std::floor(a / b); },
     {i32, i8},
     -20,
     20,
     -5,
     -1,
     true,
     false},
    {"and",
     [](const T& a, const T& b) { return a & b; },
     [](double a, double b) { return double(int64_t(a) & int64_t(b)); },
     {i32, u8, b8},
     -50,
     50,
     -50,
     50,
     true,
     false},
    {"or",
     [](const T& a, const T& b) { return a | b; },
     [](double a, double b) { return double(int64_t(a) | int64_t(b)); },
     {i32, u8, b8},
     -50,
     50,
     -50,
     50,
     true,
     false},
    {"xor",
     [](const T& a, const T& b) { return a ^ b; },
     [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); },
     {i32, u8, b8},
     -50,
     50,
     -50,
     50,
     true,
     false},
};

// Shape pairs: same shape, trailing broadcast, two-sided broadcast, size 0, size 1 with a scalar.
const std::pair<Dims, Dims> kBinaryShapes[] = {
    {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 5}, {3, 1}}, {{0, 3}, {3}}, {{1}, {}}};

void add_binary(Table& t) {
  for (const BinaryOp& b : kBinary) {
    auto f = b.f;
    auto r = b.r;
    auto run = [f](const TV& x) { return f(x[0], x[1]); };
    auto ref = [r](const AV& x) { return ref::zip(x[0], x[1], r); };
    for (DType dt : b.dtypes) {
      double lo = b.lo, hi = b.hi, blo = b.blo, bhi = b.bhi;
      if (is_unsigned(dt))
        lo = std::max(lo, 0.0), blo = std::max(blo, 0.0), bhi = std::max(bhi, 1.0);
      bool first = dt == b.dtypes.front();
      for (const auto& [da, db] : kBinaryShapes) {
        if (!first && da.size() == 1) continue;  // the scalar case once per op
        t.add(b.name, to_string(dt),
              {in(da, dt, t.next_layout(), lo, hi, b.integral),
               in(db, dt, t.next_layout(), blo, bhi, b.integral)},
              run, ref, b.to_bool ? b8 : dt);
      }
    }
  }
  // Mixed dtypes promote; C++ numbers are weak.
  auto add_ref = [](const AV& x) { return ref::zip(x[0], x[1], std::plus<>()); };
  auto add_run = [](const TV& x) { return x[0] + x[1]; };
  t.add("add_mixed", "int32+float32", {in({3, 4}, i32, L::Permuted), in({4}, f32)}, add_run,
        add_ref, f32);
  t.add("add_mixed", "float16+float32", {in({3, 4}, f16), in({3, 4}, f32, L::Flipped)}, add_run,
        add_ref, f32);
  t.add("add_mixed", "int8+uint8",
        {in({3, 4}, i8, L::Contiguous, -9, 9), in({3, 4}, u8, L::Shrunk, 0, 9)}, add_run, add_ref,
        dtypes::int16);
  t.add("add_mixed", "bool+int32", {in({3, 4}, b8), in({3, 4}, i32)}, add_run, add_ref, i32);
  t.add(
      "mul_number", "int32*2.5", {in({3, 4}, i32, L::Expanded)},
      [](const TV& x) { return x[0] * 2.5; },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v * 2.5; }); }, f32);
  t.add(
      "add_number", "float16+1.0", {in({3, 4}, f16)}, [](const TV& x) { return x[0] + 1.0; },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v + 1; }); }, f16);
  t.add(
      "add_number", "uint8+1", {in({3, 4}, u8, L::Contiguous, 0, 200)},
      [](const TV& x) { return x[0] + 1; },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v + 1; }); }, u8);
  t.add(
      "rsub_number", "float32", {in({3, 4}, f32, L::Padded)},
      [](const TV& x) { return 2.0 - x[0]; },
      [](const AV& x) { return ref::map(x[0], [](double v) { return 2 - v; }); }, f32);
  t.add(
      "div_number", "int32/4", {in({3, 4}, i32, L::Contiguous, -9, 9)},
      [](const TV& x) { return x[0] / 4; },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v / 4; }); }, f32);
  t.add(
      "div_int", "int32/int32",
      {in({3, 4}, i32, L::Contiguous, -9, 9), in({4}, i32, L::Contiguous, 1, 5)},
      [](const TV& x) { return x[0] / x[1]; },
      [](const AV& x) { return ref::zip(x[0], x[1], std::divides<>()); }, f32);
  // where(cond, a, b) with three-way broadcasting
  auto where_ref = [](const AV& x) { return ref::where(x[0], x[1], x[2]); };
  auto where_run = [](const TV& x) { return where(x[0], x[1], x[2]); };
  for (DType dt : {f32, f16, i32, b8}) {
    t.add("where", to_string(dt),
          {in({3, 4}, b8, t.next_layout()), in({3, 4}, dt, t.next_layout()), in({3, 4}, dt)},
          where_run, where_ref, dt);
    t.add("where", to_string(dt), {in({3, 1}, b8), in({4}, dt, t.next_layout()), in({2, 1, 1}, dt)},
          where_run, where_ref, dt);
  }
  t.add(
      "where_number", "float32", {in({3, 4}, f32, L::Flipped)},
      [](const TV& x) { return (x[0] > 0).where(x[0], -1.5); },
      [](const AV& x) { return ref::map(x[0], [](double v) { return v > 0 ? v : -1.5; }); }, f32);
}

}  // namespace

const std::vector<OpCase>& op_table() {
  static const std::vector<OpCase> table = [] {
    Table t;
    add_unary(t);
    add_binary(t);
    add_reduce_cases(t);
    add_movement_cases(t);
    return t.cases;
  }();
  return table;
}

}  // namespace optable
