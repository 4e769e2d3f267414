// Simplification under a validity gate. A gate such as (x<4) & (r0*4+r1<16) & !(y<2) bounds the
// expressions it compares; wherever the gate holds, an index may be simplified as if those
// expressions had the tighter ranges. Each bounded expression is replaced by a fresh variable with
// the tightened range, the index is simplified, and the variable is replaced back.
#include <fmt/format.h>

#include <map>

#include "uop/symbolic.h"
#include "uop/symbolic_impl.h"

namespace ugrad {
namespace {

using namespace sym;

struct Bound {
  int64_t lo, hi;
};

bool index_dt(DType t) { return t.scalar == Scalar::Index && t.count == 1 && !t.is_ptr; }

// The clauses of an AND tree, left to right.
std::vector<UOp> clauses_of(const UOp& valid) {
  std::vector<UOp> out, stack{valid};
  while (!stack.empty()) {
    UOp c = stack.back();
    stack.pop_back();
    if (c.op() == Op::AND && is_bool(c.dtype())) {
      stack.push_back(c.src(1));
      stack.push_back(c.src(0));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// X<k: X <= k-1;  k<X: X >= k+1;  !(X<k): X >= k;  !(k<X): X <= k.
std::optional<std::pair<UOp, Bound>> clause_bound(const UOp& c) {
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(),
                    hi = std::numeric_limits<int64_t>::max();
  bool negated = false;
  UOp cmp = c;
  if (c.op() == Op::CMPNE && c.src(1).is_const(1) && is_bool(c.src(0).dtype())) {
    negated = true;
    cmp = c.src(0);
  }
  if (cmp.op() != Op::CMPLT || !index_dt(cmp.src(0).dtype())) return std::nullopt;
  const UOp &a = cmp.src(0), &b = cmp.src(1);
  if (b.is_const() && !a.is_const()) {
    int64_t k = b.const_int();
    if (negated) return std::pair{a, Bound{k, hi}};
    if (k == lo) return std::nullopt;
    return std::pair{a, Bound{lo, k - 1}};
  }
  if (a.is_const() && !b.is_const()) {
    int64_t k = a.const_int();
    if (negated) return std::pair{b, Bound{lo, k}};
    if (k == hi) return std::nullopt;
    return std::pair{b, Bound{k + 1, hi}};
  }
  return std::nullopt;
}

// Tightened ranges of the expressions the clauses bound; nullopt when some range is empty (the
// gate is never true).
std::optional<std::map<UOp, Bound>> gate_bounds(const std::vector<UOp>& clauses) {
  std::map<UOp, Bound> bounds;
  for (const UOp& c : clauses) {
    auto cb = clause_bound(c);
    if (!cb) continue;
    auto [it, fresh] = bounds.emplace(cb->first, Bound{cb->first.vmin(), cb->first.vmax()});
    it->second.lo = std::max(it->second.lo, cb->second.lo);
    it->second.hi = std::min(it->second.hi, cb->second.hi);
    if (it->second.lo > it->second.hi) return std::nullopt;
  }
  return bounds;
}

UOp simplify_under(const UOp& idx, const std::map<UOp, Bound>& bounds) {
  std::vector<std::pair<UOp, UOp>> to_fake, from_fake;
  for (const auto& [expr, b] : bounds) {
    if (b.lo == expr.vmin() && b.hi == expr.vmax()) continue;  // nothing learned
    UOp fake = UOp::variable(fmt::format("valid_{:016x}", expr.hash()), b.lo, b.hi);
    to_fake.emplace_back(expr, fake);
    from_fake.emplace_back(fake, expr);
  }
  if (to_fake.empty()) return idx;
  UOp out = simplify(idx.substitute(to_fake)).substitute(from_fake);
  return out;
}

}  // namespace

UOp simplify_valid(const UOp& idx, const UOp& valid) {
  auto bounds = gate_bounds(clauses_of(valid));
  if (!bounds) return idx;
  return simplify_under(idx, *bounds);
}

UOp simplify_gate(const UOp& valid) {
  std::vector<UOp> clauses = clauses_of(simplify(valid));
  // A clause that the other clauses (and the ranges) imply is dropped.
  for (size_t i = 0; i < clauses.size();) {
    std::vector<UOp> others = clauses;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    auto bounds = gate_bounds(others);
    if (!bounds) return UOp::cnst_bool(false);
    UOp c = simplify(simplify_under(clauses[i], *bounds));
    if (c.is_const(1)) {
      clauses = others;
    } else if (c.is_const(0)) {
      return UOp::cnst_bool(false);
    } else {
      ++i;
    }
  }
  if (clauses.empty()) return UOp::cnst_bool(true);
  UOp out = clauses[0];
  for (size_t i = 1; i < clauses.size(); ++i) out = out.alu(Op::AND, clauses[i]);
  return out;
}

const PatternMatcher& pm_simplify_valid() {
  using R = std::optional<UOp>;
  static const PatternMatcher pm =
      pm_symbolic() +
      PatternMatcher({
          // INDEX(buf, idx, gate): idx simplified where the gate holds
          {UPat(Op::INDEX, {UPat::var("buf"), UPat::var("idx"), UPat::var("gate", dt_bool)}),
           [](const Match& m) -> R {
             UOp idx = simplify_valid(m["idx"], m["gate"]);
             if (idx == m["idx"]) return std::nullopt;
             return m.root().replace_src({m["buf"], idx, m["gate"]});
           }},
          // where(gate, x, y): x simplified where the gate holds. Never an address: a load in x
          // runs whatever the WHERE picks (a select evaluates both sides), so its index must
          // stay in bounds where the gate is false too; only the load's own gate (the INDEX rule
          // above) may tighten it. (Simplified under the WHERE's gate, Q2_K's and Q3_K's bit
          // reads became row*110 + l - 32 for l < 32 too: bytes before the buffer, which a GPU
          // faults on.)
          {where(UPat::var("gate", dt_bool), UPat::var("x"), UPat::var("y")),
           [](const Match& m) -> R {
             for (const UOp& u : m["x"].toposort())
               if (u.op() == Op::INDEX) return std::nullopt;
             UOp x = simplify_valid(m["x"], m["gate"]);
             if (x == m["x"]) return std::nullopt;
             return m["gate"].where(x, m["y"]);
           }},
          // a & b: clauses implied by the others dropped
          {UPat(Op::AND).with_dtype(dt_bool),
           [](const Match& m) -> R {
             UOp g = simplify_gate(m.root());
             return g == m.root() ? std::nullopt : std::optional(g);
           }},
      });
  return pm;
}

}  // namespace ugrad
