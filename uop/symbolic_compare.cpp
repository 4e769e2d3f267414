// pm_compare: integer comparisons rewritten by algebra (constants and common factors move to the
// constant side) and by truncating-division bounds. Comparisons that the ranges decide are folded
// by pm_const_fold (vmin == vmax). Only index-typed operands: index math does not wrap.
#include "uop/symbolic.h"
#include "uop/symbolic_impl.h"

namespace ugrad {
namespace {

using namespace sym;
using R = std::optional<UOp>;

bool index_dt(DType t) { return t.scalar == Scalar::Index && t.count == 1 && !t.is_ptr; }

int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }

// Coefficients divided by g (and negated when `flip`).
Affine scaled(const Affine& a, int64_t g, bool flip) {
  Affine out;
  for (const Term& t : a.terms) out.terms.push_back({t.base, (flip ? -t.coeff : t.coeff) / g});
  return out;
}

struct Normal {
  Affine a;
  int64_t g;  // gcd of the coefficients (> 0)
  bool all_negative;
};

std::optional<Normal> normal_form(const UOp& u) {
  std::optional<Affine> a = decompose(u);
  if (!a || a->terms.empty()) return std::nullopt;
  int64_t g = 0;
  bool all_negative = true;
  for (const Term& t : a->terms) {
    if (t.coeff == std::numeric_limits<int64_t>::min()) return std::nullopt;
    g = gcd(g, t.coeff);
    all_negative &= t.coeff < 0;
  }
  return Normal{*a, g, all_negative};
}

// x < d with x = h*y + s, 0 <= s < h and h | d: y < d/h, as floor(x/h) = y (split_at_factor).
// A vector lane index under an aligned base: base*16 + lane < 64 is base < 4, for all 16 lanes.
// Returns y and d/h.
std::optional<std::pair<UOp, int64_t>> lt_split(const UOp& x, int64_t d) {
  std::optional<Affine> a = decompose(x);
  if (!a || a->terms.size() < 2) return std::nullopt;
  for (int64_t h : shared_factors(*a, d))
    if (auto ys = split_at_factor(*a, h, x.dtype())) return std::pair{ys->first, d / h};
  return std::nullopt;
}

// S + k < d, S = g*S': S' < ceil((d-k)/g); all coefficients negative: floor((k-d)/g) < -S'.
R lt_sum_const(const UOp& root, const UOp& lhs, int64_t d) {
  if (auto s = lt_split(lhs, d)) return s->first.lt(iconst(lhs.dtype(), s->second));
  std::optional<Normal> n = normal_form(lhs);
  if (!n) return std::nullopt;
  auto rhs = checked_add(d, -n->a.constant);
  if (!rhs || *rhs == std::numeric_limits<int64_t>::min()) return std::nullopt;
  DType t = lhs.dtype();
  UOp out = n->all_negative
                ? iconst(t, floordiv(-*rhs, n->g)).lt(rebuild(scaled(n->a, n->g, true), t))
                : rebuild(scaled(n->a, n->g, false), t).lt(iconst(t, ceildiv(*rhs, n->g)));
  return out == root ? std::nullopt : std::optional(out);
}

// c < S + k, S = g*S': floor((c-k)/g) < S'; all coefficients negative: -S' < ceil((k-c)/g).
R lt_const_sum(const UOp& root, int64_t c, const UOp& rhs_sum) {
  // c < x is !(x < c+1): split as above, c < h*y + s iff (c+1)/h - 1 < y.
  if (c != std::numeric_limits<int64_t>::max())
    if (auto s = lt_split(rhs_sum, c + 1))
      return iconst(rhs_sum.dtype(), s->second - 1).lt(s->first);
  std::optional<Normal> n = normal_form(rhs_sum);
  if (!n) return std::nullopt;
  auto lhs = checked_add(c, -n->a.constant);
  if (!lhs || *lhs == std::numeric_limits<int64_t>::min()) return std::nullopt;
  DType t = rhs_sum.dtype();
  UOp out = n->all_negative
                ? rebuild(scaled(n->a, n->g, true), t).lt(iconst(t, ceildiv(-*lhs, n->g)))
                : iconst(t, floordiv(*lhs, n->g)).lt(rebuild(scaled(n->a, n->g, false), t));
  return out == root ? std::nullopt : std::optional(out);
}

// S + k != d (or ==), S = g*S': S' != (d-k)/g, or always true (false) when g does not divide d-k.
R ne_sum_const(const UOp& root, const UOp& lhs, int64_t d) {
  std::optional<Normal> n = normal_form(lhs);
  if (!n) return std::nullopt;
  auto rhs = checked_add(d, -n->a.constant);
  if (!rhs) return std::nullopt;
  bool is_ne = root.op() == Op::CMPNE;
  if (*rhs % n->g != 0) return UOp::cnst_bool(is_ne);
  DType t = lhs.dtype();
  UOp l = rebuild(scaled(n->a, n->g, false), t), r = iconst(t, *rhs / n->g);
  UOp out = is_ne ? l.ne(r) : l.eq(r);
  return out == root ? std::nullopt : std::optional(out);
}

// a < b, a != b, a == b with terms that cancel between the sides: (a-b) < 0 (and != 0, == 0),
// which the rules above then normalize. Only when something cancels, so it cannot churn.
R cancel_sides(const UOp& root) {
  const UOp &l = root.src(0), &r = root.src(1);
  if (l.is_const() || r.is_const()) return std::nullopt;
  std::optional<Affine> a = decompose(l), b = decompose(r);
  if (!a || !b) return std::nullopt;
  Affine diff = *a;
  for (const Term& t : b->terms) {
    if (t.coeff == std::numeric_limits<int64_t>::min()) return std::nullopt;
    diff.terms.push_back({t.base, -t.coeff});
  }
  auto k = checked_add(a->constant, -b->constant);
  if (!k || b->constant == std::numeric_limits<int64_t>::min()) return std::nullopt;
  diff.constant = 0;
  diff = combine_like_terms(diff);
  if (diff.terms.size() == a->terms.size() + b->terms.size()) return std::nullopt;
  DType t = l.dtype();
  UOp lhs = rebuild(diff, t), rhs = iconst(t, -*k);
  return UOp::make(root.op(), root.dtype(), {lhs, rhs});
}

}  // namespace

const PatternMatcher& pm_compare() {
  static const PatternMatcher pm = [] {
    UPat ix = UPat::var("x", index_dt);
    UPat c0 = UPat::cvar("c0"), c1 = UPat::cvar("c1");
    return PatternMatcher({
        // x//c < d -> x < d*c (d >= 1), x < (d-1)*c + 1 (d <= 0), for c > 0
        {lt(idiv(ix, c0), c1),
         [](const Match& m) -> R {
           int64_t c = m["c0"].const_int(), d = m["c1"].const_int();
           if (c <= 0) return std::nullopt;
           auto bound = d >= 1 ? checked_mul(d, c) : checked_mul(d - 1, c);
           if (!bound || (d < 1 && !checked_add(*bound, 1))) return std::nullopt;
           return m["x"].lt(d >= 1 ? *bound : *bound + 1);
         }},
        // d < x//c -> (d+1)*c - 1 < x (d >= 0), d*c < x (d < 0), for c > 0
        {lt(c1, idiv(ix, c0)),
         [](const Match& m) -> R {
           int64_t c = m["c0"].const_int(), d = m["c1"].const_int();
           if (c <= 0 || d == std::numeric_limits<int64_t>::max()) return std::nullopt;
           auto bound = d >= 0 ? checked_mul(d + 1, c) : checked_mul(d, c);
           if (!bound) return std::nullopt;
           return m["x"].const_int_like(d >= 0 ? *bound - 1 : *bound).lt(m["x"]);
         }},
        // c0*x + k < d -> x < ceil((d-k)/c0); -x < d -> -d < x (and sums with a common factor);
        // h*y + s < d -> y < d/h when 0 <= s < h and h divides d
        {lt(ix, c1),
         [](const Match& m) { return lt_sum_const(m.root(), m["x"], m["c1"].const_int()); }},
        // c < c0*x + k -> floor((c-k)/c0) < x; c < h*y + s -> (c+1)/h - 1 < y likewise
        {lt(c0, ix),
         [](const Match& m) { return lt_const_sum(m.root(), m["c0"].const_int(), m["x"]); }},
        // a + x < b + x -> a - b < 0, likewise != and == (terms cancel across the sides)
        {UPat::ops({Op::CMPLT, Op::CMPNE, Op::CMPEQ}, {ix, UPat::var("y", index_dt)}),
         [](const Match& m) { return cancel_sides(m.root()); }},
        // c0*x + k != d -> x != (d-k)/c0, or True when c0 does not divide d-k (== likewise)
        {UPat::ops({Op::CMPNE, Op::CMPEQ}, {ix, c1}),
         [](const Match& m) { return ne_sum_const(m.root(), m["x"], m["c1"].const_int()); }},
    });
  }();
  return pm;
}

}  // namespace ugrad
