#include "codegen/lower/gpu_decomp.h"

#include <cmath>
#include <limits>
#include <unordered_map>

namespace ugrad {

namespace {

UOp f64(double v) { return UOp::cnst(dtypes::float64, v); }
UOp i64(int64_t v) { return UOp::cnst_int(dtypes::int64, v); }
UOp bitcast(const UOp& x, DType t) { return UOp::make(Op::BITCAST, t, {x}); }
UOp min(const UOp& a, const UOp& b) { return -((-a).max(-b)); }

// sum c[i] * x^i by Horner's rule.
UOp horner(const UOp& x, const std::vector<double>& c) {
  UOp acc = UOp::cnst(x.dtype(), c.back());
  for (size_t i = c.size() - 1; i-- > 0;) acc = acc * x + UOp::cnst(x.dtype(), c[i]);
  return acc;
}

// 2^k for an int64 k in the normal range [-1022, 1023]: the exponent field alone.
UOp pow2i(const UOp& k) { return bitcast((k + i64(1023)).alu(Op::SHL, i64(52)), dtypes::float64); }

// round half away from zero, as a float.
UOp round_away(const UOp& y) {
  const UOp half = UOp::cnst(y.dtype(), 0.5);
  return y.lt(UOp::cnst(y.dtype(), 0)).where((y - half).alu(Op::TRUNC), (y + half).alu(Op::TRUNC));
}

bool is_gpu_gap(const UOp& u) {
  const Scalar s = u.dtype().scalar;
  if (u.dtype().count != 1) return false;
  if (s == Scalar::Float64) return u.op() == Op::EXP2 || u.op() == Op::LOG2 || u.op() == Op::SIN;
  return u.op() == Op::SIN && (s == Scalar::Float32 || s == Scalar::Float16);
}

}  // namespace

UOp exp2_f64(const UOp& x0) {
  // 2^x = 2^n * 2^f, n = floor(x), f in [0, 1); 2^f = e^(f ln 2) by its Taylor series (degree 16:
  // truncation error < 1e-17). 2^n is applied as two normal powers so subnormal results work.
  const UOp x = min(x0.max(f64(-1100)), f64(1100));
  UOp t = x.alu(Op::TRUNC);
  UOp n = x.lt(t).where(t - f64(1), t);
  UOp g = (x - n) * f64(M_LN2);
  std::vector<double> c(17);
  double fact = 1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i > 0) fact *= double(i);
    c[i] = 1.0 / fact;
  }
  UOp p = horner(g, c);
  UOp ni = n.cast(dtypes::int64);
  UOp n1 = ni.idiv(i64(2)), n2 = ni - n1;
  UOp r = p * pow2i(n1) * pow2i(n2);
  return x0.ne(x0).where(x0, r);
}

UOp log2_f64(const UOp& x0) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172:
  // the odd series to s^25 (error < 1e-18). Subnormals are scaled by 2^54 first.
  const double inf = std::numeric_limits<double>::infinity();
  const UOp tiny = x0.lt(f64(std::ldexp(1.0, -1022)));
  UOp x = tiny.where(x0 * f64(std::ldexp(1.0, 54)), x0);
  UOp bits = bitcast(x, dtypes::int64);
  UOp e = (bits.alu(Op::SHR, i64(52)).alu(Op::AND, i64(0x7ff)) - i64(1023)).cast(dtypes::float64);
  e = tiny.where(e - f64(54), e);
  UOp m = bitcast(bits.alu(Op::AND, i64(0xfffffffffffffLL)).alu(Op::OR, i64(1023LL << 52)),
                  dtypes::float64);
  UOp big = f64(M_SQRT2).lt(m);
  m = big.where(m * f64(0.5), m);
  e = big.where(e + f64(1), e);
  UOp s = (m - f64(1)).alu(Op::FDIV, m + f64(1));
  std::vector<double> c;
  for (int k = 0; k <= 12; ++k) c.push_back(1.0 / (2 * k + 1));
  UOp ln_m = f64(2) * s * horner(s * s, c);
  UOp r = e + ln_m * f64(1.0 / M_LN2);
  const UOp nan = f64(std::numeric_limits<double>::quiet_NaN());
  r = x0.eq(f64(inf)).where(f64(inf), r);
  r = x0.eq(f64(0)).where(f64(-inf), r);
  return (x0.lt(f64(0)).alu(Op::OR, x0.ne(x0))).where(nan, r);
}

UOp sin_f64(const UOp& x) {
  // k = round(x * 2/pi), r = x - k*pi/2 with pi/2 in three parts (fdlibm's pio2_1..3: exact
  // products for |k| < 2^20), then +-sin(r) or +-cos(r) by k mod 4, Taylor to r^17 / r^18.
  const double pio2_1 = 1.57079632673412561417e+00, pio2_2 = 6.07710050630396597660e-11,
               pio2_3 = 2.02226624871116645580e-21;
  UOp k = round_away(x * f64(M_2_PI));
  UOp r = ((x - k * f64(pio2_1)) - k * f64(pio2_2)) - k * f64(pio2_3);
  UOp r2 = r * r;
  std::vector<double> cs, cc;
  double fact = 1;
  for (int i = 1; i <= 18; ++i) {
    fact *= i;
    const double sign = (i / 2) % 2 ? -1.0 : 1.0;
    if (i % 2)
      cs.push_back(sign / fact);  // r^1, r^3, ... coefficients
    else
      cc.push_back(sign / fact);  // r^2, r^4, ...
  }
  UOp sin_r = r * horner(r2, cs);
  cc.insert(cc.begin(), 1.0);
  UOp cos_r = horner(r2, cc);
  UOp q = k.cast(dtypes::int64).alu(Op::AND, i64(3));
  UOp v = q.alu(Op::AND, i64(1)).eq(i64(1)).where(cos_r, sin_r);
  UOp out = q.alu(Op::AND, i64(2)).eq(i64(2)).where(-v, v);
  // inf - inf is NaN already; keep NaN for inf explicitly (k*pio2 overflows to inf - inf).
  const UOp nan = f64(std::numeric_limits<double>::quiet_NaN());
  return x.ne(x).alu(Op::OR, x.eq(f64(INFINITY))).alu(Op::OR, x.eq(f64(-INFINITY))).where(nan, out);
}

UOp sin_reduced(const UOp& x0) {
  // r = x - 2*pi*round(x / (2*pi)), with 2*pi = 6.28125 (exact in 8 bits) + its remainder.
  const DType t = x0.dtype();
  UOp x = t.scalar == Scalar::Float32 ? x0 : x0.cast(dtypes::float32);
  auto c = [](double v) { return UOp::cnst(dtypes::float32, v); };
  UOp k = round_away(x * c(1.0 / (2 * M_PI)));
  UOp r = (x - k * c(6.28125)) - k * c(2 * M_PI - 6.28125);
  UOp s = r.alu(Op::SIN);
  return t.scalar == Scalar::Float32 ? s : s.cast(t);
}

UOp gpu_decompose(const UOp& k, const CodegenTarget& target) {
  if (!target.is_gpu) return k;
  std::unordered_map<UOp, UOp> repl;
  bool any = false;
  for (const UOp& u : k.toposort()) {
    std::vector<UOp> src;
    for (const UOp& s : u.src()) {
      auto it = repl.find(s);
      src.push_back(it == repl.end() ? s : it->second);
    }
    UOp n = u.replace_src(std::move(src));
    if (is_gpu_gap(u)) {
      const UOp& x = n.src(0);
      if (u.dtype().scalar == Scalar::Float64)
        n = u.op() == Op::EXP2 ? exp2_f64(x) : u.op() == Op::LOG2 ? log2_f64(x) : sin_f64(x);
      else
        n = sin_reduced(x);
      any = true;
    }
    if (!(n == u)) repl.emplace(u, n);
  }
  if (!any) return k;
  auto it = repl.find(k);
  return it == repl.end() ? k : it->second;
}

}  // namespace ugrad
