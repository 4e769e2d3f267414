// Interval analysis for integer and bool UOps: vmin/vmax by op, computed bottom-up over the graph
// (iteratively) and cached on each node. Sound: the true value always lies in [vmin, vmax]. Bounds
// are computed exactly (128-bit); a result that leaves the dtype's range may have wrapped, so it
// becomes the whole dtype range. uint64 values above INT64_MAX cannot be described: uint64 nodes
// get [0, INT64_MAX] and no rule may rely on them (see sym::exact_int).
#include <algorithm>
#include <limits>

#include "uop/uop.h"

namespace ugrad {
namespace {

using i128 = __int128;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Bounds {
  i128 lo, hi;
};

Bounds dtype_bounds(DType t) {
  if (t.is_ptr) return {kMin, kMax};
  if (is_bool(t)) return {0, 1};
  if (!is_int(t)) return {kMin, kMax};
  if (t.scalar == Scalar::UInt64) return {0, kMax};
  if (t.scalar == Scalar::Index || t.scalar == Scalar::Int64) return {kMin, kMax};
  return {static_cast<i128>(dtype_min(t)), static_cast<i128>(dtype_max(t))};
}

Bounds get(const UOp& u) { return {u.node()->bound_min.load(), u.node()->bound_max.load()}; }

Bounds hull(std::initializer_list<i128> v) { return {std::min(v), std::max(v)}; }

// Truncating division (C), exact in 128 bits.
i128 tdiv(i128 a, i128 b) { return a / b; }

// x // y over intervals; y must not contain 0. Truncating division is monotone in x for a fixed
// sign of y, and in y for a fixed sign of x, so the extremes are at the corners.
Bounds div_bounds(Bounds a, Bounds b) {
  return hull({tdiv(a.lo, b.lo), tdiv(a.lo, b.hi), tdiv(a.hi, b.lo), tdiv(a.hi, b.hi)});
}

// x % y where |y| <= m (m >= 1): the result has the sign of x and |result| < m, and |result| <=
// |x|.
Bounds mod_bounds(Bounds a, i128 m, std::optional<i128> exact_divisor) {
  if (exact_divisor) {
    i128 c = *exact_divisor;
    // x stays within one run of c consecutive non-negative (or non-positive) values: x % c is
    // monotone there.
    if (a.lo >= 0 && a.lo / c == a.hi / c) return {a.lo % c, a.hi % c};
    if (a.hi <= 0 && a.lo / c == a.hi / c) return {a.lo % c, a.hi % c};
  }
  i128 lo = a.lo >= 0 ? 0 : std::max(a.lo, -(m - 1));
  i128 hi = a.hi <= 0 ? 0 : std::min(a.hi, m - 1);
  return {lo, hi};
}

Bounds compute(const UOp& u, Bounds none) {
  auto s = [&](size_t i) { return get(u.src(i)); };
  auto cval = [&](size_t i) -> std::optional<i128> {
    if (u.src(i).op() != Op::CONST || !is_int(u.src(i).dtype())) return std::nullopt;
    return u.src(i).const_int();
  };
  switch (u.op()) {
    case Op::CONST:
      if (is_float(u.dtype())) return none;
      return {u.const_int(), u.const_int()};
    case Op::PARAM: {
      const auto& p = u.arg_as<ParamArg>();
      return p.slot < 0 ? Bounds{p.lo, p.hi} : none;
    }
    case Op::AFTER:  // a bound variable, AFTER(var, STORE(var, value)): the variable's range
      return s(0);
    case Op::RANGE:
    case Op::SPECIAL:
      return {0, std::max<i128>(0, s(0).hi - 1)};
    case Op::ADD:
      return {s(0).lo + s(1).lo, s(0).hi + s(1).hi};
    case Op::SUB:
      return {s(0).lo - s(1).hi, s(0).hi - s(1).lo};
    case Op::NEG:
      return {-s(0).hi, -s(0).lo};
    case Op::MUL: {
      Bounds a = s(0), b = s(1);
      return hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi});
    }
    case Op::MAX:
      return {std::max(s(0).lo, s(1).lo), std::max(s(0).hi, s(1).hi)};
    case Op::IDIV: {
      Bounds b = s(1);
      if (b.lo > 0 || b.hi < 0) return div_bounds(s(0), b);
      return none;  // the divisor may be 0
    }
    case Op::MOD: {
      Bounds b = s(1);
      if (b.lo > 0 || b.hi < 0) {
        i128 m = std::max(b.hi < 0 ? -b.lo : b.hi, b.hi < 0 ? -b.hi : b.lo);
        std::optional<i128> c = cval(1);
        if (c && *c < 0) c = -*c;
        return mod_bounds(s(0), m, c);
      }
      return none;
    }
    case Op::SHL:
      if (auto c = cval(1); c && *c >= 0 && *c < 63) {
        i128 f = i128(1) << static_cast<int>(*c);
        return {s(0).lo * f, s(0).hi * f};
      }
      return none;
    case Op::SHR:  // arithmetic shift = floor division by 2^c, monotone
      if (auto c = cval(1); c && *c >= 0 && *c < 64) {
        int k = static_cast<int>(*c);
        return {s(0).lo >> k, s(0).hi >> k};
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
      if (!disjoint && !same_point) return {0, 1};
      i128 v = (u.op() == Op::CMPNE) == disjoint;
      return {v, v};
    }
    case Op::AND:
      if (is_bool(u.dtype())) return {s(0).lo & s(1).lo, s(0).hi & s(1).hi};
      // x & m for m >= 0 keeps a subset of m's bits: 0 <= result <= m (and <= x when x >= 0)
      if (s(1).lo >= 0) return {0, s(0).lo >= 0 ? std::min(s(0).hi, s(1).hi) : s(1).hi};
      if (s(0).lo >= 0) return {0, s(0).hi};
      return none;
    case Op::OR:
      if (is_bool(u.dtype())) return {s(0).lo | s(1).lo, s(0).hi | s(1).hi};
      return none;
    case Op::XOR:
      if (is_bool(u.dtype())) return {0, 1};
      return none;
    case Op::WHERE: {
      Bounds c = s(0);
      if (c.lo == c.hi) return c.lo ? s(1) : s(2);
      return {std::min(s(1).lo, s(2).lo), std::max(s(1).hi, s(2).hi)};
    }
    case Op::CAST: {
      DType from = u.src(0).dtype();
      if (!is_int(from) && !is_bool(from)) return none;
      if (from.scalar == Scalar::UInt64) return none;
      Bounds a = s(0);
      if (is_bool(u.dtype())) {
        if (a.lo > 0 || a.hi < 0) return {1, 1};
        if (a.lo == 0 && a.hi == 0) return {0, 0};
        return {0, 1};
      }
      return a;  // out of the target's range: wrapped, caught by the caller's check
    }
    default:
      return none;
  }
}

// The node's bounds, or its whole dtype range when the value may have wrapped (or is unknown).
Bounds checked(const UOp& u) {
  const Bounds none = dtype_bounds(u.dtype());
  if (!is_int(u.dtype()) && !is_bool(u.dtype())) return none;
  if (u.dtype().count != 1 || u.dtype().is_ptr) return none;
  Bounds b = compute(u, none);
  if (b.lo < none.lo || b.hi > none.hi || b.lo > b.hi) return none;
  return b;
}

bool cached(const UOp& u) { return u.node()->has_bounds.load(std::memory_order_acquire); }

void store(const UOp& u) {
  const UOpNode* n = u.node();
  Bounds b = checked(u);
  n->bound_min.store(static_cast<int64_t>(b.lo));
  n->bound_max.store(static_cast<int64_t>(b.hi));
  n->has_bounds.store(true, std::memory_order_release);
}

void ensure_bounds(const UOp& root) {
  if (cached(root)) return;
  // The common case while rewriting: a new node over analysed sources needs no graph walk.
  if (std::all_of(root.src().begin(), root.src().end(), cached)) return store(root);
  for (const UOp& u : root.toposort([](const UOp& u) { return !cached(u); })) store(u);
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
