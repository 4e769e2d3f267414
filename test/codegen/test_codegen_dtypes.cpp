// Every dtype through a few ops, against the same ops in C++.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "base/float16.h"
#include "kernel_harness.h"
#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// Storage of `n` values of dtype `t` made from small doubles.
std::vector<uint8_t> make(DType t, const std::vector<double>& v) {
  std::vector<uint8_t> out(v.size() * itemsize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    uint8_t* p = out.data() + i * itemsize(t);
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (t.scalar) {
      case Scalar::Bool:
        put(uint8_t(v[i] != 0));
        break;
      case Scalar::Int8:
        put(int8_t(v[i]));
        break;
      case Scalar::Int16:
        put(int16_t(v[i]));
        break;
      case Scalar::Int32:
        put(int32_t(v[i]));
        break;
      case Scalar::Int64:
        put(int64_t(v[i]));
        break;
      case Scalar::UInt8:
        put(uint8_t(v[i]));
        break;
      case Scalar::UInt16:
        put(uint16_t(v[i]));
        break;
      case Scalar::UInt32:
        put(uint32_t(v[i]));
        break;
      case Scalar::UInt64:
        put(uint64_t(v[i]));
        break;
      case Scalar::Float16:
        put(float_to_half(float(v[i])));
        break;
      case Scalar::BFloat16:
        put(float_to_bf16(float(v[i])));
        break;
      case Scalar::Float32:
        put(float(v[i]));
        break;
      case Scalar::Float64:
        put(v[i]);
        break;
      default:
        FAIL("dtype");
    }
  }
  return out;
}

double get(DType t, const std::vector<uint8_t>& b, size_t i) {
  const uint8_t* p = b.data() + i * itemsize(t);
  auto rd = [&](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t.scalar) {
    case Scalar::Bool:
      return rd(uint8_t()) != 0;
    case Scalar::Int8:
      return rd(int8_t());
    case Scalar::Int16:
      return rd(int16_t());
    case Scalar::Int32:
      return rd(int32_t());
    case Scalar::Int64:
      return double(rd(int64_t()));
    case Scalar::UInt8:
      return rd(uint8_t());
    case Scalar::UInt16:
      return rd(uint16_t());
    case Scalar::UInt32:
      return rd(uint32_t());
    case Scalar::UInt64:
      return double(rd(uint64_t()));
    case Scalar::Float16:
      return half_to_float(rd(uint16_t()));
    case Scalar::BFloat16:
      return bf16_to_float(rd(uint16_t()));
    case Scalar::Float32:
      return rd(float());
    case Scalar::Float64:
      return rd(double());
    default:
      return 0;
  }
}

}  // namespace

TEST_CASE("every dtype: add, mul, max, compare, where, cast to float32 and back") {
  const int N = 16;
  std::vector<double> xs, ys;
  for (int i = 0; i < N; ++i) {
    xs.push_back(i % 7);
    ys.push_back((i * 5) % 6);
  }
  for (DType t : all_scalar_dtypes()) {
    if (t.scalar == Scalar::WeakInt || t.scalar == Scalar::WeakFloat || t.scalar == Scalar::Index)
      continue;
    CAPTURE(to_string(t));
    UOp o_add = buf(0, t, N), o_mul = buf(1, t, N), o_max = buf(2, t, N),
        o_lt = buf(3, dtypes::bool_, N), o_f = buf(4, dtypes::float32, N), o_back = buf(5, t, N),
        a = buf(6, t, N), b = buf(7, t, N);
    UOp i = UOp::range(N, 0);
    UOp x = load(a, i), y = load(b, i);
    UOp f = x.cast(dtypes::float32);
    UOp ast =
        sink({store(o_add, i, x + y), store(o_mul, i, x * y), store(o_max, i, x.max(y)),
              store(o_lt, i, x.lt(y)), store(o_f, i, x.lt(y).where(f, y.cast(dtypes::float32))),
              store(o_back, i, (f + UOp::cnst(dtypes::float32, 1)).cast(t))});
    // Scalar code, and the same with 8 vector lanes.
    for (const CodegenOptions& opts :
         {CodegenOptions{.noopt = 1},
          CodegenOptions{.opts = std::vector<Opt>{{OptType::Upcast, 0, 8}}}}) {
      Kernel k = compile(ast, opts);
      std::vector<uint8_t> va = make(t, xs), vb = make(t, ys);
      std::vector<uint8_t> r_add(N * itemsize(t)), r_mul(r_add.size()), r_max(r_add.size()),
          r_lt(N), r_back(r_add.size());
      std::vector<float> r_f(N);
      k.run({r_add.data(), r_mul.data(), r_max.data(), r_lt.data(), r_f.data(), r_back.data(),
             va.data(), vb.data()});
      const bool is_b = is_bool(t);
      for (int n = 0; n < N; ++n) {
        double xv = get(t, va, n), yv = get(t, vb, n);
        CAPTURE(n);
        CHECK(get(t, r_add, n) == get(t, make(t, {is_b ? double(xv || yv) : xv + yv}), 0));
        CHECK(get(t, r_mul, n) == get(t, make(t, {is_b ? double(xv && yv) : xv * yv}), 0));
        CHECK(get(t, r_max, n) == std::max(xv, yv));
        CHECK(get(dtypes::bool_, r_lt, n) == (xv < yv));
        CHECK(r_f[n] == float(xv < yv ? xv : yv));
        CHECK(get(t, r_back, n) == get(t, make(t, {is_b ? double(xv + 1 != 0) : xv + 1}), 0));
      }
    }
  }
}

TEST_CASE("int division and remainder truncate toward zero, shifts, bit ops, pow") {
  const int N = 12;
  std::vector<int32_t> xa{7, -7, 7, -7, 100, -100, 1, 0, 45, -45, 9, -1};
  std::vector<int32_t> xb{2, 2, -2, -2, 7, 7, 3, 5, 4, -4, 9, 3};
  UOp od = buf(0, dtypes::int32, N), om = buf(1, dtypes::int32, N), os = buf(2, dtypes::int32, N),
      ox = buf(3, dtypes::int32, N), op = buf(4, dtypes::float32, N), a = buf(5, dtypes::int32, N),
      b = buf(6, dtypes::int32, N);
  UOp i = UOp::range(N, 0);
  UOp x = load(a, i), y = load(b, i);
  UOp sh = UOp::cnst_int(dtypes::int32, 2);
  UOp fx = x.cast(dtypes::float32),
      fy = (y % UOp::cnst_int(dtypes::int32, 3)).cast(dtypes::float32);
  UOp ast = sink({store(od, i, x.idiv(y)), store(om, i, x % y),
                  store(os, i, x.alu(Op::SHL, sh) + x.alu(Op::SHR, sh)),
                  store(ox, i, x.alu(Op::XOR, y).alu(Op::OR, x.alu(Op::AND, y))),
                  store(op, i, fx.alu(Op::POW, fy))});
  Kernel k = compile(ast);
  std::vector<int32_t> rd(N), rm(N), rs(N), rx(N);
  std::vector<float> rp(N);
  k.run({rd.data(), rm.data(), rs.data(), rx.data(), rp.data(), xa.data(), xb.data()});
  for (int n = 0; n < N; ++n) {
    CAPTURE(n);
    CHECK(rd[n] == xa[n] / xb[n]);
    CHECK(rm[n] == xa[n] % xb[n]);
    CHECK(rs[n] == (xa[n] << 2) + (xa[n] >> 2));
    CHECK(rx[n] == ((xa[n] ^ xb[n]) | (xa[n] & xb[n])));
    CHECK(rp[n] == doctest::Approx(std::pow(float(xa[n]), float(xb[n] % 3))).epsilon(1e-4));
  }
}

TEST_CASE("transcendentals and float16/bfloat16 reductions") {
  const int N = 64;
  std::vector<float> va = randf(N, 11, 0.25f, 2.f);
  UOp oe = buf(0, dtypes::float32, N), oh = buf(1, dtypes::float16, 1),
      ob = buf(2, dtypes::bfloat16, 1), a = buf(3, dtypes::float32, N);
  UOp i = UOp::range(N, 0), r = UOp::range(N, 1, AxisType::Reduce);
  UOp x = load(a, i);
  UOp v = x.alu(Op::EXP2) + x.alu(Op::LOG2) + x.alu(Op::SIN) + x.alu(Op::SQRT) + x.alu(Op::RECIP);
  UOp xr = load(a, r);
  UOp ast = sink(
      {store(oe, i, v),
       store(oh, UOp::cnst_int(dtypes::index, 0), reduce(xr.cast(dtypes::float16), Op::ADD, {r})),
       store(ob, UOp::cnst_int(dtypes::index, 0),
             reduce(xr.cast(dtypes::bfloat16), Op::MAX, {r}))});
  Kernel k = compile(ast, {.opts = std::vector<Opt>{{OptType::Upcast, 0, 16}}});
  std::vector<float> re(N);
  uint16_t rh = 0, rb = 0;
  k.run({re.data(), &rh, &rb, va.data()});
  float sum = 0, mx = -INFINITY;
  for (int n = 0; n < N; ++n) {
    float xv = va[n];
    CHECK(re[n] ==
          doctest::Approx(std::exp2(xv) + std::log2(xv) + std::sin(xv) + std::sqrt(xv) + 1 / xv)
              .epsilon(1e-5));
    sum = half_to_float(float_to_half(sum + half_to_float(float_to_half(xv))));
    mx = std::max(mx, bf16_to_float(float_to_bf16(xv)));
  }
  CHECK(half_to_float(rh) == doctest::Approx(sum).epsilon(1e-3));
  CHECK(bf16_to_float(rb) == mx);
}

TEST_CASE("float32 exp2 on the CPU: within 2 ulp of libm, exact at integers, and its edges") {
  // The CPU path computes exp2 as a polynomial with exponent bits (no libm call); check it
  // densely over the whole float32 range and at the edges: subnormal results, overflow, inf, NaN.
  std::vector<float> xs;
  for (double v = -151; v <= 129; v += 1.0 / 64) xs.push_back(static_cast<float>(v));
  for (float v :
       {0.5f, -0.5f, 0.49999997f, -0.49999997f, 1e-8f, -1e-8f, 127.99999f, 128.0f, -126.0f, -149.0f,
        -149.5f, -150.0f, -160.0f, 200.0f, -200.0f, INFINITY, -INFINITY, NAN})
    xs.push_back(v);
  while (xs.size() % 16 != 0) xs.push_back(0);
  const int n = static_cast<int>(xs.size());
  UOp o = buf(0, dtypes::float32, n), a = buf(1, dtypes::float32, n);
  UOp i = UOp::range(n, 0);
  Kernel k = compile(sink({store(o, i, load(a, i).alu(Op::EXP2))}),
                     {.opts = std::vector<Opt>{{OptType::Upcast, 0, 16}}});
  CHECK(k.ks.src.find("exp2") == std::string::npos);  // no libm call per lane
  std::vector<float> got(n);
  k.run({got.data(), xs.data()});
  for (int j = 0; j < n; ++j) {
    const float want = static_cast<float>(std::exp2(double(xs[j])));
    CAPTURE(xs[j]);
    if (std::isnan(xs[j])) {
      CHECK(std::isnan(got[j]));
    } else if (xs[j] == std::trunc(xs[j]) || std::isinf(want) || want == 0) {
      CHECK(got[j] == want);
    } else if (want < std::numeric_limits<float>::min()) {
      CHECK(std::abs(got[j] - want) <= 2 * std::numeric_limits<float>::denorm_min());
    } else {
      CHECK(std::abs(got[j] - want) <= 2 * (std::nextafter(want, INFINITY) - want));
    }
  }
}

TEST_CASE("every dtype's kernel compiles for gfx1100") {
  const int N = 16;
  for (DType t : all_scalar_dtypes()) {
    if (t.scalar == Scalar::WeakInt || t.scalar == Scalar::WeakFloat || t.scalar == Scalar::Index)
      continue;
    CAPTURE(to_string(t));
    UOp out = buf(0, t, N), flag = buf(1, dtypes::bool_, N), a = buf(2, t, N), b = buf(3, t, N);
    UOp i = UOp::range(N, 0), r = UOp::range(N, 1, AxisType::Reduce);
    UOp x = load(a, i), y = load(b, i);
    UOp f = x.cast(dtypes::float32) * UOp::cnst(dtypes::float32, 0.5);
    UOp ast = sink({store(out, i, (x + y).max(reduce(load(a, r) * y, Op::ADD, {r})) + f.cast(t)),
                    store(flag, i, x.lt(y))});
    KernelSource ks = codegen(ast, amd_codegen_target("gfx1100"));
    CHECK_NOTHROW(llvm_compile_object(amdgpu_target("gfx1100"), ks.src, ks.name));
  }
}
