#include "codegen/lower/lower_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "codegen/ranges.h"

namespace ugrad {

UOp reduce_identity(Op op, DType dtype) {
  switch (op) {
    case Op::ADD:
      return UOp::cnst_int(dtype, 0);
    case Op::MUL:
      return UOp::cnst_int(dtype, 1);
    case Op::MAX:
      if (is_float(dtype)) return UOp::cnst(dtype, -std::numeric_limits<double>::infinity());
      if (is_bool(dtype)) return UOp::cnst_bool(false);
      if (dtype.scalar == Scalar::Int64 || dtype.scalar == Scalar::Index)
        return UOp::cnst_int(dtype, std::numeric_limits<int64_t>::min());
      return UOp::cnst_int(dtype, static_cast<int64_t>(dtype_min(dtype)));
    default:
      fail("codegen: REDUCE with op {} (ADD, MUL or MAX expected)", op_name(op));
  }
}

namespace {

// Terms per iteration from which a vector accumulator is split into two chains, and the most
// accumulators in one loop for which it is (more would not fit the registers: a 32-row matmul
// tile has 16).
constexpr size_t kMinTermsToSplit = 4;
constexpr size_t kMaxMembersToSplit = 2;

// Members of one shared reduce loop.
struct ReduceGroup {
  std::vector<UOp> ranges;  // the reduce ranges, in loop order
  std::vector<UOp> outer;   // open ranges outside the reduce
  std::vector<UOp> members;
};

// After expansion an Unroll range is a lane axis (expand.h).
bool is_lane(const UOp& r) { return r.arg_as<RangeArg>().type == AxisType::Unroll; }

// A REDUCE over lanes only: the sum of a vector's lanes, left for the renderer.
bool is_horizontal(const UOp& u) {
  return u.op() == Op::REDUCE && std::all_of(u.src().begin() + 1, u.src().end(), is_lane);
}

bool is_loop_reduce(const UOp& u) { return u.op() == Op::REDUCE && !is_horizontal(u); }

bool contains_reduce(const UOp& u) {
  for (const UOp& x : u.src(0).toposort())
    if (is_loop_reduce(x)) return true;
  return false;
}

// The operands of the op-tree of `op` at `x`: x = t0 op t1 op ... (the unrolled copies of a value).
std::vector<UOp> terms(const UOp& x, Op op) {
  std::vector<UOp> out, stack{x};
  while (!stack.empty()) {
    UOp u = stack.back();
    stack.pop_back();
    if (u.op() == op && u.src().size() == 2) {
      stack.push_back(u.src(1));
      stack.push_back(u.src(0));
    } else {
      out.push_back(u);
    }
  }
  return out;
}

// The factors of the MUL tree at x, left to right; a product that does not vary over `lanes` (a
// scalar, computed once) is one factor, and so is one in `whole` (shared with other reduces).
std::vector<UOp> factors(const UOp& x, const std::vector<UOp>& lanes,
                         const std::unordered_set<UOp>& whole) {
  auto varies = [&](const UOp& r) { return depends_on(x, r); };
  if (x.op() != Op::MUL || whole.count(x) || std::none_of(lanes.begin(), lanes.end(), varies))
    return {x};
  std::vector<UOp> out = factors(x.src(0), lanes, whole), right = factors(x.src(1), lanes, whole);
  out.insert(out.end(), right.begin(), right.end());
  return out;
}

// Products that the terms of two or more reduces compute: a GEMM tile's dequantized weight
// (q * d), shared by its rows. Factoring d out of one row's terms would multiply by it in every
// row, where the shared product multiplies once for all of them (a 32-row Q8_0 matmul spent 3
// float ops per block and row instead of 2).
std::unordered_set<UOp> shared_products(const std::vector<UOp>& reduces) {
  std::unordered_map<UOp, size_t> users;
  for (const UOp& red : reduces)
    for (const UOp& u : red.src(0).toposort())
      if (u.op() == Op::MUL) ++users[u];
  std::unordered_set<UOp> shared;
  for (const auto& [u, n] : users)
    if (n >= 2) shared.insert(u);
  return shared;
}

UOp product(const std::vector<UOp>& fs) {
  UOp p = fs[0];
  for (size_t i = 1; i < fs.size(); ++i) p = p * fs[i];
  return p;
}

// Float terms of a sum that share a factor (a super-block's scale, the same for its sub-blocks'
// lane groups) multiply it once: f*a + f*b + ... -> f * (a + b + ...), greedily by the factor in
// most terms. The inner sum is two interleaved chains of multiply-adds (half the latency of one);
// reassociating a sum is what splitting accumulators does already.
std::vector<UOp> factor_shared(const std::vector<UOp>& parts, const std::vector<UOp>& lanes,
                               const std::unordered_set<UOp>& whole) {
  std::vector<std::vector<UOp>> fs;
  for (const UOp& p : parts) fs.push_back(factors(p, lanes, whole));
  std::vector<bool> used(parts.size(), false);
  auto open = [&](size_t i) { return !used[i] && fs[i].size() >= 2; };
  std::vector<UOp> out;
  for (;;) {
    std::unordered_map<UOp, size_t> count;  // open parts holding each factor
    for (size_t i = 0; i < parts.size(); ++i)
      for (auto f = fs[i].begin(); open(i) && f != fs[i].end(); ++f)
        if (std::find(fs[i].begin(), f, *f) == f) ++count[*f];
    UOp best;
    size_t most = 1;
    for (size_t i = 0; i < parts.size(); ++i)  // the first factor seen wins ties: deterministic
      for (const UOp& f : fs[i])
        if (open(i) && count[f] > most) best = f, most = count[f];
    if (!best) break;
    UOp chain[2];
    for (size_t i = 0, n = 0; i < parts.size(); ++i) {
      auto at = std::find(fs[i].begin(), fs[i].end(), best);
      if (!open(i) || at == fs[i].end()) continue;
      std::vector<UOp> rest = fs[i];
      rest.erase(rest.begin() + (at - fs[i].begin()));
      UOp& c = chain[n++ % 2];
      c = c ? c + product(rest) : product(rest);
      used[i] = true;
    }
    out.push_back(best * (chain[1] ? chain[0] + chain[1] : chain[0]));
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (!used[i]) out.push_back(parts[i]);
  return out;
}

// Lowers the innermost REDUCEs (those with no REDUCE inside): one pass of the fixed point.
UOp lower_innermost(const UOp& ast, int64_t& next_acc) {
  RangeMap open = open_ranges(ast);
  std::vector<ReduceGroup> groups;
  for (const UOp& u : ast.toposort()) {
    if (!is_loop_reduce(u) || contains_reduce(u)) continue;
    std::vector<UOp> ranges(u.src().begin() + 1, u.src().end());
    std::sort(ranges.begin(), ranges.end(), loop_order);
    const std::vector<UOp>& outer = open.at(u);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ReduceGroup& g) {
      return g.ranges == ranges && g.outer == outer;
    });
    if (g == groups.end())
      groups.push_back({ranges, outer, {u}});
    else
      g->members.push_back(u);
  }
  std::vector<std::pair<UOp, UOp>> repl;
  for (const ReduceGroup& g : groups) {
    const std::unordered_set<UOp> whole = shared_products(g.members);
    std::vector<std::vector<UOp>> accs;  // per member: its accumulators (chains)
    std::vector<UOp> updates;
    for (const UOp& red : g.members) {
      const DType dt = red.dtype();
      const Op op = red.arg_as<Op>();
      // An accumulator of a value with vector lanes is a vector.
      uint16_t lanes = 1;
      for (const UOp& r : g.outer)
        if (r.arg_as<RangeArg>().type == AxisType::Upcast) lanes = uint16_t(r.src(0).const_int());
      for (const UOp& r : g.ranges)
        if (is_lane(r)) lanes = uint16_t(r.src(0).const_int());
      // A vector accumulator takes the unrolled terms one by one (multiply-adds into it); a
      // scalar one their pairwise sum (shorter chains). With few accumulators in the loop the
      // terms alternate between two, so each chain of dependent multiply-adds is half as long (a
      // Q4_K matvec's 8 lane groups per super-block were one chain: latency-bound).
      std::vector<UOp> parts = lanes > 1 ? terms(red.src(0), op) : std::vector{red.src(0)};
      if (op == Op::ADD && is_float(dt) && parts.size() > 1) {
        std::vector<UOp> lane_axes;
        for (const UOp& r : g.ranges)
          if (is_lane(r)) lane_axes.push_back(r);
        parts = factor_shared(parts, lane_axes, whole);
      }
      const size_t chains = g.members.size() > kMaxMembersToSplit  ? 1
                            : parts.size() >= 4 * kMinTermsToSplit ? 4
                            : parts.size() >= kMinTermsToSplit     ? 2
                                                                   : 1;
      accs.emplace_back();
      for (size_t c = 0; c < chains; ++c) {
        UOp acc = UOp::make(Op::DEFINE_REG, dt.vec(lanes).ptr(AddrSpace::Reg), {}, next_acc++);
        // The accumulator is reset inside the outer loops: AFTER ties it to them.
        std::vector<UOp> after_src{acc};
        after_src.insert(after_src.end(), g.outer.begin(), g.outer.end());
        UOp acc_outer = g.outer.empty() ? acc : UOp::make(Op::AFTER, acc.dtype(), after_src);
        UOp zero = UOp::cnst_int(dtypes::index, 0);
        UOp init = UOp::make(
            Op::STORE, dtypes::void_,
            {UOp::make(Op::INDEX, acc.dtype(), {acc_outer, zero}), reduce_identity(op, dt)});
        // Read and written every iteration: AFTER ties it to the reduce loops too.
        std::vector<UOp> in_loop{acc, init};
        in_loop.insert(in_loop.end(), g.ranges.begin(), g.ranges.end());
        UOp acc_init = UOp::make(Op::AFTER, acc.dtype(), in_loop);
        UOp next = UOp::make(Op::LOAD, dt, {UOp::make(Op::INDEX, acc.dtype(), {acc_init, zero})});
        for (size_t t = c; t < parts.size(); t += chains) next = next.alu(op, parts[t]);
        updates.push_back(UOp::make(Op::STORE, dtypes::void_,
                                    {UOp::make(Op::INDEX, acc.dtype(), {acc_init, zero}), next}));
        accs.back().push_back(acc);
      }
    }
    UOp body = updates.size() == 1 ? updates[0] : UOp::make(Op::GROUP, dtypes::void_, updates);
    std::vector<UOp> end_src{body}, lanes;
    for (const UOp& r : g.ranges) (is_lane(r) ? lanes : end_src).push_back(r);
    UOp end = UOp::make(Op::END, dtypes::void_, end_src);
    for (size_t i = 0; i < accs.size(); ++i) {
      const UOp& red = g.members[i];
      UOp value;
      for (const UOp& acc : accs[i]) {
        UOp acc_done = UOp::make(Op::AFTER, acc.dtype(), {acc, end});
        UOp done = UOp::make(
            Op::LOAD, red.dtype(),
            {UOp::make(Op::INDEX, acc.dtype(), {acc_done, UOp::cnst_int(dtypes::index, 0)})});
        value = value ? value.alu(red.arg_as<Op>(), done) : done;
      }
      // A vector accumulator over lanes: its lanes are summed once, after the loop.
      if (!lanes.empty()) {
        std::vector<UOp> h{value};
        h.insert(h.end(), lanes.begin(), lanes.end());
        value = UOp::make(Op::REDUCE, red.dtype(), h, red.arg());
      }
      repl.emplace_back(red, value);
    }
  }
  return ast.substitute(repl);
}

}  // namespace

UOp lower_reduces(const UOp& ast) {
  UOp out = ast;
  int64_t next_acc = 0;
  for (;;) {
    bool any = false;
    for (const UOp& u : out.toposort()) any |= is_loop_reduce(u);
    if (!any) break;
    out = lower_innermost(out, next_acc);
  }
  // Stores are closed by an END over their output loops (a vector axis is not a loop); stores
  // with the same loops share one loop nest, so work they share (a GEMM tile's reduce) runs once.
  RangeMap open = open_ranges(out);
  std::vector<std::pair<std::vector<UOp>, std::vector<UOp>>> nests;  // loops, stores
  for (const UOp& s : out.src()) {
    std::vector<UOp> loops = open.at(s);
    std::erase_if(loops,
                  [](const UOp& r) { return r.arg_as<RangeArg>().type == AxisType::Upcast; });
    auto it =
        std::find_if(nests.begin(), nests.end(), [&](const auto& n) { return n.first == loops; });
    if (it == nests.end())
      nests.push_back({loops, {s}});
    else
      it->second.push_back(s);
  }
  std::vector<UOp> stores;
  for (auto& [loops, group] : nests) {
    UOp body = group.size() == 1 ? group[0] : UOp::make(Op::GROUP, dtypes::void_, group);
    if (loops.empty()) {
      stores.push_back(body);
      continue;
    }
    std::vector<UOp> end_src{body};
    end_src.insert(end_src.end(), loops.begin(), loops.end());
    stores.push_back(UOp::make(Op::END, dtypes::void_, end_src));
  }
  return out.replace_src(std::move(stores));
}

}  // namespace ugrad
