#include "codegen/lower/lane_permute.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace ugrad {

namespace {

// Table lookups only pay where they replace at least this many vector ops (a lone int-to-float
// conversion is one op either way).
constexpr int kMinOps = 2;
constexpr int64_t kTableSize = 16;

bool is_lane_axis(const UOp& u) {
  if (u.op() != Op::RANGE) return false;
  const AxisType t = u.arg_as<RangeArg>().type;
  return t == AxisType::Unroll || t == AxisType::Upcast;
}

// Per node: the lane axis it depends on (null: lane-invariant), and, for nodes that depend on it
// only through one integer in [0, 16), that integer and the vector ops above it.
struct Info {
  UOp lane;
  UOp index;  // null: no single 4-bit index (a load, a second index, ...)
  int ops = 0;
};

std::optional<int64_t> low_bits_mask(const UOp& u);
UOp low_nibble(const UOp& x);

Info info_of(const UOp& u, const std::unordered_map<UOp, Info>& done) {
  if (is_lane_axis(u)) return {u, UOp(), 0};
  Info out;
  bool open = true;  // every lane-varying source goes through the same index so far
  for (const UOp& s : u.src()) {
    const Info& i = done.at(s);
    if (!i.lane) continue;
    if (!out.lane) {
      out = i;
    } else if (!(i.index == out.index) || !i.index) {
      open = false;
    } else {
      out.ops += i.ops;
    }
  }
  if (!out.lane) return out;
  const bool arith = is_alu(u.op()) || u.op() == Op::CAST;
  if (open && out.index && arith) {  // a function of the index
    out.ops += 1;
    return out;
  }
  const DType t = u.dtype();
  if (open && arith && is_int(t) && t.count == 1 && u.vmin() >= 0 && u.vmax() < kTableSize) {
    // x & c with c < 16 is a function of x & 15: bit tests of one value share that index (the
    // simplifier folds (x & 15) & c to x & c).
    if (low_bits_mask(u) && !(low_nibble(u.src(0)) == u))
      return {out.lane, low_nibble(u.src(0)), 1};
    return {out.lane, u, 0};  // where the lanes first meet in a 4-bit value
  }
  return {out.lane, UOp(), 0};
}

// The bits of an `x & c` with a constant 0 <= c < 16, if u is one.
std::optional<int64_t> low_bits_mask(const UOp& u) {
  if (u.op() != Op::AND || !u.src(1).is_const() || is_bool(u.dtype())) return std::nullopt;
  const int64_t c = u.src(1).const_int();
  return c >= 0 && c < kTableSize ? std::optional(c) : std::nullopt;
}

UOp low_nibble(const UOp& x) { return x.alu(Op::AND, UOp::cnst_int(x.dtype(), kTableSize - 1)); }

// lane * (a * b) (either order) with a and b lane-invariant.
struct LaneTimesProduct {
  UOp lane, a, b;
};
std::optional<LaneTimesProduct> lane_times_product(const UOp& n) {
  if (n.op() != Op::MUL) return std::nullopt;
  auto varies = [](const UOp& x) {
    for (const UOp& y : x.toposort())
      if (is_lane_axis(y)) return true;
    return false;
  };
  for (int side = 0; side < 2; ++side) {
    const UOp &x = n.src(side), &y = n.src(1 - side);
    if (y.op() == Op::MUL && varies(x) && !varies(y.src(0)) && !varies(y.src(1)))
      return LaneTimesProduct{x, y.src(0), y.src(1)};
  }
  return std::nullopt;
}

}  // namespace

UOp lane_permutes(const UOp& expanded, const CodegenTarget& target) {
  if (!target.has_lane_permute) return expanded;
  const std::vector<UOp> nodes = expanded.toposort();
  std::unordered_map<UOp, Info> info;
  std::unordered_map<UOp, std::vector<UOp>> users;
  for (const UOp& u : nodes) {
    info.emplace(u, info_of(u, info));
    for (const UOp& s : u.src()) users[s].push_back(u);
  }
  auto eligible = [&](const UOp& u) {
    const Info& i = info.at(u);
    return i.index && !(i.index == u) && u.dtype() == dtypes::float32 &&
           i.lane.src(0).const_int() >= kTableSize && i.ops >= kMinOps;
  };
  struct Lookup {
    UOp value, table, index;
  };
  std::vector<Lookup> lookups;
  for (const UOp& u : nodes) {
    if (!eligible(u)) continue;
    bool outermost = true;  // a user that is itself a lookup of the same index covers u
    for (const UOp& p : users[u])
      if (eligible(p) && info.at(p).index == info.at(u).index) outermost = false;
    if (!outermost) continue;
    const Info& i = info.at(u);
    UOp index = i.index;
    if (index.op() == Op::AND && low_nibble(index.src(0)) == index) index = index.src(0);
    // x & c as (x & 15) & c, so the index is there to be replaced by the lane
    std::vector<std::pair<UOp, UOp>> masks;
    for (const UOp& n : u.toposort())
      if (low_bits_mask(n) && low_nibble(n.src(0)) == i.index && !(n == i.index))
        masks.emplace_back(n, i.index.alu(Op::AND, n.src(1)));
    const UOp f = masks.empty() ? u : u.substitute(masks);
    lookups.push_back({u, f.substitute({{i.index, i.lane.cast(i.index.dtype())}}), index});
  }
  // In a table, lane * (a * b) becomes (lane * a) * b when a is a factor of other tables too (a
  // Q4_K super-block's d, shared by its 8 sub-blocks' tables): lane * a is then computed once, and
  // b meets a vector, so x86 multiplies by it straight from a broadcast load instead of multiplying
  // scalars and broadcasting the product (a shuffle-port uop per sub-block).
  std::unordered_map<UOp, int> shared;
  for (const Lookup& l : lookups)
    for (const UOp& n : l.table.toposort())
      if (auto f = lane_times_product(n)) ++shared[f->a], ++shared[f->b];
  std::vector<std::pair<UOp, UOp>> repl;
  for (const Lookup& l : lookups) {
    std::vector<std::pair<UOp, UOp>> regroup;
    for (const UOp& n : l.table.toposort()) {
      auto f = lane_times_product(n);
      if (!f || std::max(shared[f->a], shared[f->b]) < 2) continue;
      const bool a_first = shared[f->a] >= shared[f->b];
      regroup.emplace_back(n, (f->lane * (a_first ? f->a : f->b)) * (a_first ? f->b : f->a));
    }
    const UOp table = regroup.empty() ? l.table : l.table.substitute(regroup);
    repl.emplace_back(l.value,
                      UOp::make(Op::CUSTOM, l.value.dtype(), {table, l.index}, kLanePermute));
  }
  return repl.empty() ? expanded : expanded.substitute(repl);
}

}  // namespace ugrad
