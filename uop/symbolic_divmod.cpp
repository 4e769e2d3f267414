// pm_divmod: folding of integer division and remainder, for C-truncating IDIV/MOD. A rule that is
// only valid for non-negative dividends (where truncation equals flooring) checks vmin first.
#include "uop/symbolic.h"

#include "uop/symbolic_impl.h"

namespace ugrad {
namespace {

using namespace sym;
using R = std::optional<UOp>;

bool exact_scalar(DType t) { return exact_int(t); }
bool is_mod_root(const Match& m) { return m.root().op() == Op::MOD; }

// x // c and x % c for a constant c > 0, by the first of these that applies:
//   quotient constant over the range of x;  common factor of every coefficient and c;
//   remainder split (x >= 0);  common factor of the non-constant coefficients (x >= 0).
R fold_divmod_const(const UOp& x, int64_t c, bool is_mod) {
  DType t = x.dtype();
  // x // c -> q when trunc(vmin/c) == trunc(vmax/c) (truncation is monotone);
  // x % c -> x - q*c
  if (int64_t q = x.vmin() / c; q == x.vmax() / c) {
    if (!is_mod) return iconst(t, q);
    auto qc = checked_mul(q, c);
    if (qc) return q == 0 ? x : x + iconst(t, -*qc);
  }
  // The term algebra below needs x computed without wrapping: index math, or a range narrower
  // than the dtype's (a wrapped ADD/MUL widens the range to the whole dtype).
  if (t.scalar != Scalar::Index && x.vmin() <= dtype_min(t) && x.vmax() >= dtype_max(t))
    return std::nullopt;
  std::optional<Affine> a = decompose(x);
  if (!a) return std::nullopt;
  // (g*y) // (g*d) -> y // d and (g*y) % (g*d) -> (y % d) * g, g | every coefficient and c
  int64_t g = gcd(c, a->constant);
  for (const Term& term : a->terms) g = gcd(g, term.coeff);
  if (g > 1) {
    Affine y = *a;
    for (Term& term : y.terms) term.coeff /= g;
    y.constant /= g;
    UOp d = iconst(t, c / g), yy = rebuild(y, t);
    return is_mod ? (yy % d) * iconst(t, g) : yy.idiv(d);
  }
  if (x.vmin() < 0) return std::nullopt;
  // x = c*Q + R with 0 <= R: x // c -> Q + R // c and x % c -> R % c (x >= 0)
  {
    Affine q, r;
    for (const Term& term : a->terms) {
      int64_t qi = term.coeff / c;  // truncating: the remainder keeps the coefficient's sign
      if (qi) q.terms.push_back({term.base, qi});
      if (int64_t ri = term.coeff - qi * c) r.terms.push_back({term.base, ri});
    }
    q.constant = floordiv(a->constant, c);
    r.constant = floormod(a->constant, c);
    if (!q.terms.empty() || q.constant != 0) {
      UOp rem = rebuild(r, t);
      if (rem.vmin() >= 0) return is_mod ? rem % iconst(t, c) : rebuild(q, t) + rem.idiv(c);
    }
  }
  // g | every non-constant coefficient and c, 1 < g < c (x >= 0):
  //   x // c -> (x/g with floor(k/g)) // (c/g);  x % c -> ((...) % (c/g))*g + k mod g
  int64_t h = c;
  for (const Term& term : a->terms) h = gcd(h, term.coeff);
  if (h > 1 && h < c) {
    Affine y = *a;
    for (Term& term : y.terms) term.coeff /= h;
    y.constant = floordiv(a->constant, h);
    UOp yy = rebuild(y, t), d = iconst(t, c / h);
    if (!is_mod) return yy.idiv(d);
    UOp out = (yy % d) * iconst(t, h);
    int64_t km = floormod(a->constant, h);
    return km ? out + iconst(t, km) : out;
  }
  // (y % m + z) % c -> (y + z) % c when c | m and y, x, y + z >= 0: a nested remainder in a sum
  if (is_mod) {
    bool changed = false;
    Affine y = *a;
    for (Term& term : y.terms) {
      const UOp& b = term.base;
      if (b.op() == Op::MOD && b.src(1).op() == Op::CONST && b.src(1).const_int() > 0 &&
          b.src(1).const_int() % c == 0 && b.src(0).vmin() >= 0) {
        term.base = b.src(0);
        changed = true;
      }
    }
    if (changed) {
      UOp yy = rebuild(y, t);
      if (yy.vmin() >= 0) return yy % iconst(t, c);
    }
  }
  return std::nullopt;
}

// x = h*y + s with h | c, 1 < h < c and 0 <= s < h over the ranges, x >= 0 (so y >= 0):
//   x // c -> y // (c/h);  x % c -> (y % (c/h))*h + s
// Floor division by h*d is floor division by h, then by d: floor((h*y + s)/h) = y for 0 <= s < h.
// y is the sum of the terms whose coefficients h divides (h = gcd(c, one term's coefficient)),
// over h, plus floor(k/h); s is the other terms plus k mod h, or plus k when that fits instead.
// Terminates: the divisor shrinks. E.g. (128*a + 16*b + r) // 256 -> a // 2 for b < 8, r < 16.
R fold_divmod_split(const Match& m) {
  const UOp& x = m["x"];
  const int64_t c = m["c"].const_int();
  const DType t = x.dtype();
  if (c <= 1 || x.vmin() < 0) return std::nullopt;
  // x computed without wrapping, as in fold_divmod_const (a wrapped value spans the dtype)
  if (t.scalar != Scalar::Index && x.vmin() <= dtype_min(t) && x.vmax() >= dtype_max(t))
    return std::nullopt;
  std::optional<Affine> a = decompose(x);
  if (!a || a->terms.size() < 2) return std::nullopt;
  // Candidate h, largest first: the more of x goes to y, the more the quotient folds. h == c (every
  // term's factor) is the common-factor rule's case.
  for (int64_t h : shared_factors(*a, c)) {
    if (h == c) continue;
    if (auto ys = split_at_factor(*a, h, t)) {
      const auto& [y, rest] = *ys;
      const UOp d = iconst(t, c / h);
      return is_mod_root(m) ? (y % d) * iconst(t, h) + rest : y.idiv(d);
    }
  }
  return std::nullopt;
}

R fold_divmod(const Match& m) {
  const UOp &x = m["x"], &cu = m["c"];
  bool is_mod = m.root().op() == Op::MOD;
  int64_t c = cu.const_int();
  if (c == 0 || c == std::numeric_limits<int64_t>::min()) return std::nullopt;
  // x // -c -> (x // c) * -1;  x % -c -> x % c (truncating division is odd in the divisor)
  if (c < 0) return is_mod ? x % -c : x.idiv(-c) * -1;
  return fold_divmod_const(x, c, is_mod);
}

}  // namespace

const PatternMatcher& pm_divmod() {
  static const PatternMatcher pm = [] {
    UPat ix = UPat::var("x", exact_scalar);
    UPat cpos = UPat::cvar("c");
    UPat c0 = UPat::cvar("c0"), c1 = UPat::cvar("c1");
    return PatternMatcher({
        // (x // c0) // c1 -> x // (c0*c1), c0, c1 > 0
        {idiv(idiv(ix, c0), c1),
         [](const Match& m) -> R {
           int64_t a = m["c0"].const_int(), b = m["c1"].const_int();
           auto ab = checked_mul(a, b);
           if (a <= 0 || b <= 0 || !ab) return std::nullopt;
           return m["x"].idiv(*ab);
         }},
        // (x % m) % c -> x % c when c | m (the sign of x is kept by both)
        {(ix % c0) % c1,
         [](const Match& m) -> R {
           int64_t a = m["c0"].const_int(), b = m["c1"].const_int();
           if (a <= 0 || b <= 0 || a % b != 0) return std::nullopt;
           return m["x"] % b;
         }},
        // (x % (c*d)) // c -> (x // c) % d
        {idiv(ix % c0, c1),
         [](const Match& m) -> R {
           int64_t a = m["c0"].const_int(), b = m["c1"].const_int();
           if (a <= 0 || b <= 0 || a % b != 0) return std::nullopt;
           return m["x"].idiv(b) % (a / b);
         }},
        // RANGE(n) % n -> RANGE(n), RANGE(n) // n -> 0
        {UPat(Op::RANGE, {UPat::var("n")}).named("r") % UPat::var("n"),
         [](const Match& m) { return m["r"]; }},
        {idiv(UPat(Op::RANGE, {UPat::var("n")}).named("r"), UPat::var("n")),
         [](const Match& m) { return m["r"].const_int_like(0); }},
        // x // y -> 0 and x % y -> x when 0 <= x < y over the ranges
        {UPat::ops({Op::IDIV, Op::MOD}, {ix, UPat::var("y")}),
         [](const Match& m) -> R {
           const UOp &x = m["x"], &y = m["y"];
           if (x.vmin() < 0 || x.vmax() >= y.vmin()) return std::nullopt;
           return m.root().op() == Op::MOD ? x : x.const_int_like(0);
         }},
        // x // c, x % c for constant c: see fold_divmod_const
        {UPat::ops({Op::IDIV, Op::MOD}, {ix, cpos}), fold_divmod},
        // x // c, x % c for x = h*y + s, h | c, 0 <= s < h: see fold_divmod_split
        {UPat::ops({Op::IDIV, Op::MOD}, {ix, cpos}), fold_divmod_split},
    });
  }();
  return pm;
}

}  // namespace ugrad
