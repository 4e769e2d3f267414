// Symbolic rules one family at a time: interval analysis, float and bool folding, wrap safety,
// simplification under validity gates, termination on large graphs.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "uop/symbolic.h"

using namespace ugrad;

namespace {
UOp c(int64_t v) { return UOp::cnst_int(dtypes::index, v); }
UOp f32(double v) { return UOp::cnst(dtypes::float32, v); }
}  // namespace

TEST_CASE("vmin/vmax: shifts, masks, casts, negative and ranged divisors, constant conditions") {
  UOp x = UOp::variable("x", 0, 100), n = UOp::variable("n", -10, 10);
  UOp m = UOp::variable("m", 1, 8), neg = UOp::variable("k", -8, -2);
  auto bounds = [](const UOp& u) { return std::pair{u.vmin(), u.vmax()}; };
  CHECK(bounds(x.alu(Op::SHL, c(2))) == std::pair<int64_t, int64_t>{0, 400});
  CHECK(bounds(n.alu(Op::SHR, c(2))) == std::pair<int64_t, int64_t>{-3, 2});  // floor
  CHECK(bounds(n.alu(Op::AND, c(7))) == std::pair<int64_t, int64_t>{0, 7});
  CHECK(bounds(x.alu(Op::AND, c(255))) == std::pair<int64_t, int64_t>{0, 100});
  CHECK(bounds(n.idiv(-3)) == std::pair<int64_t, int64_t>{-3, 3});
  CHECK(bounds(n % -3) == std::pair<int64_t, int64_t>{-2, 2});
  CHECK(bounds(x.idiv(m)) == std::pair<int64_t, int64_t>{0, 100});
  CHECK(bounds((x + 8).idiv(m)) == std::pair<int64_t, int64_t>{1, 108});
  CHECK(bounds(x.idiv(neg)) == std::pair<int64_t, int64_t>{-50, 0});
  CHECK(bounds(x % m) == std::pair<int64_t, int64_t>{0, 7});
  CHECK(bounds(n % m) == std::pair<int64_t, int64_t>{-7, 7});
  CHECK(bounds((x + 16) % 32) == std::pair<int64_t, int64_t>{0, 31});
  CHECK(bounds((m + 16) % 32) == std::pair<int64_t, int64_t>{17, 24});  // one run: monotone
  CHECK(bounds(x.idiv(n)) ==
        std::pair<int64_t, int64_t>{std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()});  // n may be 0
  CHECK(bounds(UOp::cnst_bool(true).where(x, n)) == std::pair<int64_t, int64_t>{0, 100});
  CHECK(bounds(x.lt(50).where(x, n)) == std::pair<int64_t, int64_t>{-10, 100});
  CHECK(bounds(x.cast(dtypes::int8)) == std::pair<int64_t, int64_t>{0, 100});
  CHECK(bounds((x * 2).cast(dtypes::int8)) == std::pair<int64_t, int64_t>{-128, 127});
  CHECK(bounds(n.cast(dtypes::uint8)) == std::pair<int64_t, int64_t>{0, 255});
  CHECK(bounds(x.cast(dtypes::bool_)) == std::pair<int64_t, int64_t>{0, 1});
  CHECK(bounds(m.cast(dtypes::bool_)) == std::pair<int64_t, int64_t>{1, 1});
  CHECK(bounds(f32(2.5).cast(dtypes::int8)) == std::pair<int64_t, int64_t>{-128, 127});
}

TEST_CASE("vmin/vmax: a value that may wrap gets its dtype's whole range") {
  UOp x = UOp::variable("x", 0, 100).cast(dtypes::int8);
  CHECK(x.vmax() == 100);
  CHECK((x + x).vmin() == -128);  // 200 wraps in int8
  CHECK((x + x).vmax() == 127);
  UOp big = UOp::variable("big", 0, int64_t(1) << 62);
  CHECK((big * 4).vmin() == std::numeric_limits<int64_t>::min());  // 2^64 overflows index
  // ... and no rule folds what it cannot see: (x*2)//2 stays when x*2 may wrap in int32
  UOp w = UOp::variable("w", 0, std::numeric_limits<int32_t>::max()).cast(dtypes::int32);
  UOp e = (w * UOp::cnst_int(dtypes::int32, 2)).idiv(UOp::cnst_int(dtypes::int32, 2));
  CHECK_FALSE(simplify(e) == w);
  UOp small = UOp::variable("s", 0, 1000).cast(dtypes::int32);
  CHECK(simplify((small * UOp::cnst_int(dtypes::int32, 2)).idiv(UOp::cnst_int(dtypes::int32, 2))) ==
        small);
}

TEST_CASE("constant folding covers floats, bools and casts") {
  CHECK(simplify(f32(0.1) + f32(0.2)).const_value() == double(0.1f + 0.2f));
  CHECK(simplify(UOp::cnst(dtypes::float16, 1.0) + UOp::cnst(dtypes::float16, 0x1p-11))
            .const_value() == 1.0);
  CHECK(simplify(f32(2.0).alu(Op::SQRT)).const_value() == double(std::sqrt(2.0f)));
  CHECK(simplify(f32(-3.7).cast(dtypes::int32)).const_int() == -3);
  CHECK(simplify(UOp::cnst_int(dtypes::int8, 100) + UOp::cnst_int(dtypes::int8, 100)).const_int() ==
        -56);
  CHECK(simplify(f32(1.0).lt(f32(2.0))) == UOp::cnst_bool(true));
  UOp v = UOp::make(Op::PARAM, dtypes::float32, {}, ParamArg{3, "", 0, 0});
  CHECK(simplify(v * f32(1.0)) == v);
  CHECK(simplify(v + f32(0.0)) == v);
  CHECK_FALSE(simplify(v * f32(0.0)).is_const());  // NaN * 0 is NaN
  CHECK_FALSE(simplify(v.lt(v)).is_const());       // NaN < NaN is False but NaN != NaN
  CHECK(simplify((v * f32(2.0)) * f32(3.0)) == (v * f32(2.0)) * f32(3.0));  // no reassociation
}

TEST_CASE("bool algebra and where folding") {
  UOp x = UOp::variable("x", 0, 100);
  UOp a = x.lt(10), b = x.lt(20), t = UOp::cnst_bool(true), f = UOp::cnst_bool(false);
  CHECK(simplify(a.alu(Op::AND, t)) == a);
  CHECK(simplify(a.alu(Op::AND, f)) == f);
  CHECK(simplify(a.alu(Op::OR, t)) == t);
  CHECK(simplify(a.alu(Op::OR, a)) == a);
  CHECK(simplify(a.alu(Op::XOR, a)) == f);
  CHECK(simplify(a.ne(t).ne(t)) == a);
  CHECK(simplify(a.eq(f)) == a.ne(t));
  CHECK(simplify(a.where(t, f)) == a);
  CHECK(simplify(a.where(f, t)) == a.ne(t));
  CHECK(simplify(a.ne(t).where(x, x + 1)) == a.where(x + 1, x));
  CHECK(simplify(b.where(x, x)) == x);
}

TEST_CASE("simplify_valid: gate bounds tighten the index's ranges") {
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 3), n = UOp::variable("n", -10, 10);
  CHECK(simplify_valid(x.idiv(16), x.lt(16)).render() == "0");
  CHECK(simplify_valid(x % 16, x.lt(16)).render() == "x");
  CHECK(simplify_valid((x * 4 + y) % 64, (x * 4 + y).lt(64)).render() == "((x*4)+y)");
  // !(n<0): n >= 0, so n//4 with n < 4 is 0; c < n: n >= c+1
  CHECK(
      simplify_valid(n.idiv(4), n.lt(0).ne(UOp::cnst_bool(true)).alu(Op::AND, n.lt(4))).render() ==
      "0");
  CHECK(simplify_valid(n.max(0), c(-1).lt(n)).render() == "n");
  CHECK(simplify_valid((n + 10) % 11, c(-1).lt(n)).render() == "((n+10)%11)");
  // a gate that is never true leaves the index alone
  CHECK(simplify_valid(x % 16, x.lt(5).alu(Op::AND, c(10).lt(x))) == x % 16);
  // without a usable bound nothing changes
  CHECK(simplify_valid(x % 16, x.lt(y)) == x % 16);
}

TEST_CASE("simplify_gate and pm_simplify_valid") {
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 30);
  CHECK(simplify_gate(x.lt(5).alu(Op::AND, x.lt(8))) == x.lt(5));
  CHECK(simplify_gate(x.lt(500).alu(Op::AND, y.lt(8))) == y.lt(8));
  CHECK(simplify_gate(x.lt(5).alu(Op::AND, c(7).lt(x))) == UOp::cnst_bool(false));
  UOp buf = UOp::make(Op::PARAM, dtypes::float32.ptr(), {}, ParamArg{0, "", 0, 0});
  UOp gate = x.lt(16);
  UOp idx = UOp::make(Op::INDEX, buf.dtype(), {buf, x % 16 + y.idiv(64), gate});
  UOp out = graph_rewrite(idx, pm_simplify_valid());
  CHECK(out.src(1) == x);
  CHECK(out.src(2) == gate);
  UOp w = graph_rewrite(gate.where(x.idiv(16), c(7)), pm_simplify_valid());
  CHECK(w == gate.where(c(0), c(7)));
}

// Regression (Q2_K and Q3_K linears on DEV=AMD failed with out-of-bounds loads): a WHERE's gate
// simplified the address of a load in its branch, x % 32 -> x - 32 under 31 < x, but the select
// runs the load for every x, so for x < 32 it read before the buffer. Only a load's own gate may
// tighten its index.
TEST_CASE("pm_simplify_valid: a WHERE's gate never simplifies an address in its branches") {
  UOp x = UOp::variable("x", 0, 63);
  UOp buf = UOp::make(Op::PARAM, dtypes::uint8.ptr(), {}, ParamArg{0, "", 0, 0});
  UOp load =
      UOp::make(Op::LOAD, dtypes::uint8, {UOp::make(Op::INDEX, buf.dtype(), {buf, x % 32 + 64})});
  UOp upper = c(31).lt(x);
  UOp w = graph_rewrite(upper.where(load, c(0).cast(dtypes::uint8)), pm_simplify_valid());
  for (const UOp& u : w.toposort())
    if (u.op() == Op::INDEX) CHECK(u.src(1).render() == "((x%32)+64)");
  // Gated by the same condition, the load may be simplified: it does not run where x < 32.
  UOp gated = UOp::make(Op::INDEX, buf.dtype(), {buf, x % 32 + 64, upper});
  CHECK(graph_rewrite(gated, pm_simplify_valid()).src(1).render() == "(x+32)");
}

TEST_CASE("rewriting terminates on large graphs") {
  // a long chain of constant additions folds as it goes
  UOp x = UOp::variable("x", 0, 10);
  UOp e = x;
  for (int i = 0; i < 20000; ++i) e = e + 1;
  CHECK(simplify(e) == x + 20000);
  // a wide sum of distinct and repeated terms; sums beyond the flattening cap stay correct
  std::vector<UOp> vars;
  for (int i = 0; i < 300; ++i) vars.push_back(UOp::variable(fmt::format("v{}", i), 0, 4));
  UOp sum = vars[0];
  for (int i = 1; i < 300; ++i) sum = sum + vars[size_t(i)] * 2 + vars[size_t(i % 7)];
  UOp s = simplify(sum);
  CHECK(s.vmax() == sum.vmax());
  CHECK(s.toposort().size() <= sum.toposort().size());
  // a deep nest of div/mod
  UOp d = UOp::range(1 << 20, 0);
  for (int i = 0; i < 2000; ++i) d = (d + 1) % (1 << 20);
  CHECK(simplify(d).toposort().size() < 2000 * 3);
}

// x = h*y + s, h | c, 0 <= s < h: x // c -> y // (c/h), x % c -> (y % (c/h))*h + s (pm_divmod).
// IQ4_XS: the half-block index (128*k + 16*j + r) // 256 of a lane r of lane group j.
TEST_CASE("div/mod of a sum split at a factor of the divisor") {
  UOp k = UOp::range(24, 0), j = UOp::range(8, 1), r = UOp::range(16, 2);
  UOp x = UOp::variable("x", 1, 100), n = UOp::variable("n", -10, 10);
  UOp j9 = UOp::variable("j9", 0, 8), w = UOp::variable("w", 0, 16);
  UOp sum = k * 128 + j * 16 + r;
  CHECK(simplify(sum.idiv(256)).render() == "(r0//2)");
  CHECK(simplify(sum % 256).render() == "((((r0%2)*128)+(r1*16))+r2)");
  // the constant's multiple of h joins y: 130 = 128 + 2
  CHECK(simplify((k * 128 + r + 130).idiv(256)).render() == "((r0+1)//2)");
  CHECK(simplify((k * 128 + r + 130) % 256).render() == "(((((r0+1)%2)*128)+r2)+2)");
  CHECK(simplify((k * 16 + r).idiv(32)).render() == "(r0//2)");
  CHECK(simplify((k * 16 + r) % 32).render() == "(((r0%2)*16)+r2)");
  // s can reach 128 but not 16: the smaller factor
  CHECK(simplify((k * 128 + j9 * 16 + r).idiv(256)).render() == "(((r0*8)+j9)//16)");
  // must not fire: s may be negative, no factor of c > 1, s can reach h
  CHECK(simplify((x * 128 + n).idiv(256)).render() == "(((x*128)+n)//256)");
  CHECK(simplify((x * 128 + n) % 256).render() == "(((x*128)+n)%256)");
  CHECK(simplify((x * 3 + j).idiv(8)).render() == "(((x*3)+r1)//8)");
  CHECK(simplify((x * 16 + w).idiv(64)).render() == "(((x*16)+w)//64)");
  CHECK(simplify((x * 16 + w) % 64).render() == "(((x*16)+w)%64)");
  // a negative dividend (truncating division): left alone
  CHECK(simplify((n * 16 + r).idiv(32)).render() == "(((n*16)+r2)//32)");
}

// g*y + s < c with 0 <= s < g and g | c: y < c/g (and c < g*y + s: (c+1)/g - 1 < y). A vector
// lane index under an aligned base (NEOX RoPE's halves): the comparison is the same for every lane.
TEST_CASE("comparisons of a sum with a small remainder term") {
  UOp j = UOp::range(8, 1), r = UOp::range(16, 2);
  UOp n = UOp::variable("n", -10, 10), w = UOp::variable("w", 0, 16);
  CHECK(simplify((j * 16 + r).lt(64)).render() == "(r1<4)");
  CHECK(simplify(c(63).lt(j * 16 + r)).render() == "(3<r1)");
  CHECK(simplify((j * 16 + r + 32).lt(96)).render() == "(r1<4)");
  CHECK(simplify((j * 32 + r * 2 + 1).lt(64)).render() == "(r1<2)");  // after the common factor 2
  // must not fire: the remainder can reach g, can be negative, g does not divide the bound
  CHECK(simplify((j * 16 + w).lt(64)).render() == "(((r1*16)+w)<64)");
  CHECK(simplify((j * 16 + n).lt(64)).render() == "(((r1*16)+n)<64)");
  CHECK(simplify((j * 16 + r).lt(72)).render() == "(((r1*16)+r2)<72)");
  CHECK(simplify(c(71).lt(j * 16 + r)).render() == "(71<((r1*16)+r2))");
}
