// Interval analysis for integer and bool UOps: vmin/vmax by op, computed bottom-up over the graph
// (iteratively) and cached on each node.
#include <algorithm>
#include <limits>

#include "uop/uop.h"

namespace ugrad {
namespace {

using i128 = __int128;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

int64_t clamp(i128 v) { return static_cast<int64_t>(std::clamp<i128>(v, kMin, kMax)); }

struct Bounds {
  int64_t lo, hi;
};

Bounds dtype_bounds(DType t) {
  if (is_bool(t)) return {0, 1};
  if (!is_int(t)) return {kMin, kMax};
  return {clamp(static_cast<i128>(dtype_min(t))),
          t.scalar == Scalar::UInt64 ? kMax : clamp(static_cast<i128>(dtype_max(t)))};
}

Bounds get(const UOp& u) { return {u.node()->bound_min.load(), u.node()->bound_max.load()}; }

// Truncating division of intervals by a positive constant (monotone in the dividend).
Bounds div_by_positive(Bounds a, int64_t c) { return {a.lo / c, a.hi / c}; }

Bounds compute(const UOp& u) {
  const Bounds none = dtype_bounds(u.dtype());
  auto s = [&](size_t i) { return get(u.src(i)); };
  auto is_c = [&](size_t i) { return u.src(i).op() == Op::CONST; };
  switch (u.op()) {
    case Op::CONST: {
      int64_t v = u.const_int();
      return {v, v};
    }
    case Op::PARAM: {
      const auto& p = u.arg_as<ParamArg>();
      return p.slot < 0 ? Bounds{p.lo, p.hi} : none;
    }
    case Op::RANGE:
    case Op::SPECIAL:
      return {0, std::max<int64_t>(0, s(0).hi - 1)};
    case Op::ADD:
      return {clamp(i128(s(0).lo) + s(1).lo), clamp(i128(s(0).hi) + s(1).hi)};
    case Op::SUB:
      return {clamp(i128(s(0).lo) - s(1).hi), clamp(i128(s(0).hi) - s(1).lo)};
    case Op::NEG:
      return {clamp(-i128(s(0).hi)), clamp(-i128(s(0).lo))};
    case Op::MUL: {
      Bounds a = s(0), b = s(1);
      i128 c[] = {i128(a.lo) * b.lo, i128(a.lo) * b.hi, i128(a.hi) * b.lo, i128(a.hi) * b.hi};
      return {clamp(*std::min_element(c, c + 4)), clamp(*std::max_element(c, c + 4))};
    }
    case Op::MAX:
      return {std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)};
    case Op::IDIV:
      if (is_c(1) && u.src(1).const_int() > 0) return div_by_positive(s(0), u.src(1).const_int());
      return none;
    case Op::MOD:
      if (is_c(1) && u.src(1).const_int() > 0) {
        int64_t c = u.src(1).const_int();
        Bounds a = s(0);
        if (a.lo >= 0 && a.hi < c) return a;  // x % c == x for 0 <= x < c
        return {a.lo < 0 ? -(c - 1) : 0, a.hi > 0 ? c - 1 : 0};
      }
      return none;
    case Op::CMPLT: {
      Bounds a = s(0), b = s(1);
      if (a.hi < b.lo) return {1, 1};
      if (a.lo >= b.hi) return {0, 0};
      return {0, 1};
    }
    case Op::CMPNE:
    case Op::CMPEQ: {
      Bounds a = s(0), b = s(1);
      bool disjoint = a.hi < b.lo || b.hi < a.lo;
      bool same_point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
      int64_t ne = disjoint ? 1 : same_point ? 0 : -1;
      if (ne < 0) return {0, 1};
      int64_t v = u.op() == Op::CMPNE ? ne : 1 - ne;
      return {v, v};
    }
    case Op::AND:
      if (is_bool(u.dtype())) return {s(0).lo & s(1).lo, s(0).hi & s(1).hi};
      if (is_c(1) && u.src(1).const_int() >= 0 && s(0).lo >= 0)
        return {0, std::min(s(0).hi, u.src(1).const_int())};
      return none;
    case Op::OR:
      if (is_bool(u.dtype())) return {s(0).lo | s(1).lo, s(0).hi | s(1).hi};
      return none;
    case Op::WHERE:
      return {std::min(s(1).lo, s(2).lo), std::max(s(1).hi, s(2).hi)};
    case Op::CAST: {
      Bounds a = s(0), t = none;
      if (!is_int(u.src(0).dtype()) && !is_bool(u.src(0).dtype())) return t;
      if (a.lo >= t.lo && a.hi <= t.hi) return a;
      return t;
    }
    default:
      return none;
  }
}

void ensure_bounds(const UOp& root) {
  if (root.node()->has_bounds.load(std::memory_order_acquire)) return;
  auto uncached = [](const UOp& u) {
    return !u.node()->has_bounds.load(std::memory_order_acquire);
  };
  for (const UOp& u : root.toposort(uncached)) {
    const UOpNode* n = u.node();
    Bounds b = compute(u);
    n->bound_min.store(b.lo);
    n->bound_max.store(b.hi);
    n->has_bounds.store(true, std::memory_order_release);
  }
}

}  // namespace

int64_t UOp::vmin() const {
  ensure_bounds(*this);
  return n_->bound_min.load();
}

int64_t UOp::vmax() const {
  ensure_bounds(*this);
  return n_->bound_max.load();
}

}  // namespace ugrad
