// Sums as term lists, and pm_like_terms: a flattened sum with like terms collected, div/mod pairs
// recombined and its constant last. The rule only fires when that changes the sum, and the rebuilt
// form is a fixed point of the rule, so rewriting terminates.
#include "uop/symbolic_impl.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "uop/alu.h"
#include "uop/symbolic.h"

namespace ugrad {
namespace sym {

bool exact_int(DType t) {
  return t.count == 1 && !t.is_ptr && is_int(t) && t.scalar != Scalar::UInt64;
}

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }
int64_t gcd(int64_t a, int64_t b) {
  return static_cast<int64_t>(
      std::gcd(static_cast<uint64_t>(a < 0 ? -a : a), static_cast<uint64_t>(b < 0 ? -b : b)));
}
std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

UOp iconst(DType dtype, int64_t v) {
  return UOp::cnst_int(dtype.base(), wrap_to_int_dtype(static_cast<uint64_t>(v), dtype.base()));
}

std::optional<Affine> decompose(const UOp& u, size_t max_terms) {
  Affine out;
  std::vector<std::pair<const UOp*, int64_t>> stack{{&u, 1}};
  while (!stack.empty()) {
    auto [x, k] = stack.back();
    stack.pop_back();
    switch (x->op()) {
      case Op::ADD:
        stack.emplace_back(&x->src(1), k);
        stack.emplace_back(&x->src(0), k);
        continue;
      case Op::NEG:
        if (k == std::numeric_limits<int64_t>::min()) return std::nullopt;
        stack.emplace_back(&x->src(0), -k);
        continue;
      case Op::CONST: {
        auto p = checked_mul(x->const_int(), k);
        auto s = p ? checked_add(out.constant, *p) : std::nullopt;
        if (!s) return std::nullopt;
        out.constant = *s;
        continue;
      }
      case Op::MUL:
        if (x->src(1).op() == Op::CONST) {
          auto p = checked_mul(x->src(1).const_int(), k);
          if (!p) return std::nullopt;
          stack.emplace_back(&x->src(0), *p);
          continue;
        }
        break;
      default:
        break;
    }
    if (out.terms.size() >= max_terms) return std::nullopt;
    out.terms.push_back({*x, k});
  }
  return out;
}

UOp rebuild(const Affine& a, DType dtype) {
  UOp sum;
  for (const Term& t : a.terms) {
    if (t.coeff == 0) continue;
    UOp term = t.coeff == 1 ? t.base : t.base * iconst(dtype, t.coeff);
    sum = sum ? sum + term : term;
  }
  if (!sum) return iconst(dtype, a.constant);
  return a.constant == 0 ? sum : sum + iconst(dtype, a.constant);
}

Affine combine_like_terms(const Affine& a) {
  Affine out;
  out.constant = a.constant;
  std::unordered_map<UOp, size_t> slot;
  for (const Term& t : a.terms) {
    auto [it, fresh] = slot.emplace(t.base, out.terms.size());
    if (fresh) {
      out.terms.push_back(t);
    } else {
      Term& into = out.terms[it->second];
      into.coeff = static_cast<int64_t>(static_cast<uint64_t>(into.coeff) +
                                        static_cast<uint64_t>(t.coeff));  // wraps like index math
    }
  }
  std::erase_if(out.terms, [](const Term& t) { return t.coeff == 0; });
  return out;
}

std::vector<int64_t> shared_factors(const Affine& a, int64_t c) {
  std::vector<int64_t> hs;
  for (const Term& term : a.terms)
    if (int64_t h = gcd(c, term.coeff); h > 1) hs.push_back(h);
  std::sort(hs.begin(), hs.end(), std::greater<>());
  hs.erase(std::unique(hs.begin(), hs.end()), hs.end());
  return hs;
}

std::optional<std::pair<UOp, UOp>> split_at_factor(const Affine& a, int64_t h, DType dtype) {
  Affine y, s;
  for (const Term& term : a.terms) {
    if (term.coeff % h == 0)
      y.terms.push_back({term.base, term.coeff / h});
    else
      s.terms.push_back(term);
  }
  if (s.terms.empty()) return std::nullopt;
  for (int64_t k_in_y : {floordiv(a.constant, h), int64_t(0)}) {
    y.constant = k_in_y;
    s.constant = a.constant - k_in_y * h;
    UOp rest = rebuild(s, dtype);
    if (rest.vmin() >= 0 && rest.vmax() < h) return std::pair{rebuild(y, dtype), rest};
  }
  return std::nullopt;
}

}  // namespace sym

namespace {

using namespace sym;

// (x%c)*a + (x//c)*(a*c) -> x*a: finds one such pair and merges it. True if it changed `a`.
bool recombine_divmod(Affine& a) {
  for (size_t i = 0; i < a.terms.size(); ++i) {
    const UOp& m = a.terms[i].base;
    if (m.op() != Op::MOD || m.src(1).op() != Op::CONST) continue;
    auto want = checked_mul(a.terms[i].coeff, m.src(1).const_int());
    if (!want) continue;
    for (size_t j = 0; j < a.terms.size(); ++j) {
      const UOp& d = a.terms[j].base;
      if (d.op() != Op::IDIV || d.src(0) != m.src(0) || d.src(1) != m.src(1)) continue;
      if (a.terms[j].coeff != *want) continue;
      // x % c == x - (x//c)*c in C semantics, for every sign of x.
      a.terms[i] = {m.src(0), a.terms[i].coeff};
      a.terms.erase(a.terms.begin() + static_cast<std::ptrdiff_t>(j));
      return true;
    }
    // (x%c)*a + ((x//c)%d)*(a*c) -> (x%(c*d))*a: both remainders take x's sign, and
    // |x%c + ((x//c)%d)*c| < c*d, so the sum is C's x % (c*d).
    for (size_t j = 0; j < a.terms.size(); ++j) {
      const UOp& dm = a.terms[j].base;
      if (dm.op() != Op::MOD || dm.src(1).op() != Op::CONST || a.terms[j].coeff != *want) continue;
      const UOp& d = dm.src(0);
      if (d.op() != Op::IDIV || d.src(0) != m.src(0) || d.src(1) != m.src(1)) continue;
      int64_t c = m.src(1).const_int(), dd = dm.src(1).const_int();
      auto cd = checked_mul(c, dd);
      if (c <= 0 || dd <= 0 || !cd) continue;
      a.terms[i] = {m.src(0) % iconst(m.dtype(), *cd), a.terms[i].coeff};
      a.terms.erase(a.terms.begin() + static_cast<std::ptrdiff_t>(j));
      return true;
    }
  }
  return false;
}

// True if `u` is the node rebuild() makes for term t (base, or base*coeff).
bool is_term_node(const UOp& u, const Term& t) {
  if (t.coeff == 1) return u == t.base;
  return u.op() == Op::MUL && u.src(0) == t.base && u.src(1).op() == Op::CONST &&
         u.src(1).const_int() == t.coeff;
}

// True if rebuild(a) would give `root` back: a left-leaning chain of the terms in order, the
// constant last. Checked structurally, so the common no-change case interns nothing.
bool is_rebuilt_form(const UOp& root, const Affine& a) {
  if (a.terms.empty()) return false;  // rebuild gives a CONST, root is an ADD
  UOp cur = root;
  size_t i = a.terms.size();
  if (a.constant != 0) {
    if (cur.op() != Op::ADD || !cur.src(1).is_const() || cur.src(1).const_int() != a.constant)
      return false;
    cur = cur.src(0);
  }
  for (; i > 1; --i, cur = cur.src(0))
    if (cur.op() != Op::ADD || !is_term_node(cur.src(1), a.terms[i - 1])) return false;
  return is_term_node(cur, a.terms[0]);
}

std::optional<UOp> canonical_sum(const UOp& root) {
  std::optional<Affine> a = decompose(root);
  if (!a) return std::nullopt;
  Affine c = combine_like_terms(*a);
  bool recombined = false;
  while (recombine_divmod(c)) c = combine_like_terms(c), recombined = true;
  if (!recombined && c.terms.size() == a->terms.size() && is_rebuilt_form(root, c))
    return std::nullopt;
  UOp out = rebuild(c, root.dtype());
  return out == root ? std::nullopt : std::optional(out);
}

}  // namespace

const PatternMatcher& pm_like_terms() {
  static const PatternMatcher pm({
      // sum(c_i*x_i) + k: x*c0 + x*c1 -> x*(c0+c1), x + x -> x*2, (x+c0)+y -> (x+y)+c0,
      // (x%c)*a + (x//c)*(a*c) -> x*a, (x%c)*a + ((x//c)%d)*(a*c) -> (x%(c*d))*a;
      // the constant term last
      {UPat(Op::ADD).with_dtype(exact_int), [](const Match& m) { return canonical_sum(m.root()); }},
  });
  return pm;
}

}  // namespace ugrad
