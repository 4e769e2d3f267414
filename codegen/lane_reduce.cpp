#include "codegen/lane_reduce.h"

#include <algorithm>
#include <map>

#include "codegen/expand.h"
#include "codegen/ranges.h"

namespace ugrad {

namespace {

// Widest lane counts tried, in order; at most this many vector registers of lanes.
constexpr int64_t kLaneCandidates[] = {32, 16, 8};
constexpr int64_t kMaxRegistersPerLaneVector = 4;
// Lane groups unrolled per iteration, fewest first.
constexpr int64_t kGroupCandidates[] = {1, 2, 4, 8};
// Copies of one output axis.
constexpr int64_t kMaxUpcast = 4;

// x86-64: 32 vector registers with AVX-512, 16 below it.
int64_t vector_registers(const CodegenTarget& target) { return target.simd_bytes >= 64 ? 32 : 16; }

bool has_lane_axis(const UOp& expanded) {
  for (const UOp& u : expanded.toposort())
    if (u.op() == Op::RANGE && u.arg_as<RangeArg>().type == AxisType::Unroll) return true;
  return false;
}

// Some load is gated by a condition that changes every iteration of the reduce loop `axis`.
bool gated_per_iteration(const UOp& expanded, int64_t axis) {
  const RangeMap open = open_ranges(expanded);
  for (const UOp& u : expanded.toposort()) {
    if (u.op() != Op::LOAD || u.src(0).src().size() < 3) continue;
    for (const UOp& r : open.at(u.src(0).src(2)))
      if (r.arg_as<RangeArg>().axis == axis) return true;
  }
  return false;
}

// Work per reduce step for each output axis: nodes of the reduced values (loads and arithmetic,
// not index math) that depend on the reduce axis, with the output axes each depends on.
struct Work {
  std::vector<UOp> axes;                // output loop ranges with constant extents
  std::vector<std::vector<bool>> uses;  // per node: which of `axes` it depends on
};

Work reduce_work(const UOp& ast, const std::vector<UOp>& reduces, const UOp& k) {
  Work w;
  const RangeMap open = open_ranges(ast);
  for (const UOp& s : ast.src())
    for (const UOp& r : open.at(s))
      if (r.arg_as<RangeArg>().type == AxisType::Loop && r.src(0).is_const() &&
          std::find(w.axes.begin(), w.axes.end(), r) == w.axes.end())
        w.axes.push_back(r);
  std::map<const UOpNode*, bool> seen;
  for (const UOp& red : reduces)
    for (const UOp& u : red.src(0).toposort()) {
      if (seen[u.node()] || u.dtype() == dtypes::index) continue;
      seen[u.node()] = true;
      if (u.op() != Op::LOAD && !is_alu(u.op())) continue;
      const std::vector<UOp>& rs = open.at(u);
      if (std::find(rs.begin(), rs.end(), k) == rs.end()) continue;  // hoisted out of the loop
      std::vector<bool> uses;
      for (const UOp& a : w.axes) uses.push_back(std::find(rs.begin(), rs.end(), a) != rs.end());
      w.uses.push_back(std::move(uses));
    }
  return w;
}

// Work per output element when axis i has up[i] copies: a node is shared by the copies of every
// axis it does not depend on.
double cost(const Work& w, const std::vector<int64_t>& up) {
  double c = 0;
  for (const auto& uses : w.uses) {
    double shared = 1;
    for (size_t i = 0; i < up.size(); ++i)
      if (!uses[i]) shared *= double(up[i]);
    c += 1 / shared;
  }
  return c;
}

// Greedy doubling of output-axis copies while it saves work and the accumulators fit.
std::vector<Opt> upcasts(const Work& w, int64_t max_accumulators) {
  std::vector<int64_t> up(w.axes.size(), 1);
  int64_t accumulators = 1;
  for (;;) {
    const double now = cost(w, up);
    int best = -1;
    double best_cost = now;
    for (size_t i = 0; i < up.size(); ++i) {
      const int64_t n = up[i] * 2;
      if (n > kMaxUpcast || w.axes[i].src(0).const_int() % n != 0 ||
          accumulators * 2 > max_accumulators)
        continue;
      std::vector<int64_t> trial = up;
      trial[i] = n;
      if (const double c = cost(w, trial); c < best_cost * 0.999) best = int(i), best_cost = c;
    }
    if (best < 0) break;
    up[best] *= 2;
    accumulators *= 2;
  }
  std::vector<Opt> opts;
  for (size_t i = 0; i < up.size(); ++i)
    if (up[i] > 1) opts.push_back({OptType::Upcast, w.axes[i].arg_as<RangeArg>().axis, up[i]});
  return opts;
}

}  // namespace

std::optional<std::vector<Opt>> lane_reduce_opts(const UOp& ast, const CodegenTarget& target) {
  if (target.is_gpu) return std::nullopt;
  std::vector<UOp> reduces;
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::REDUCE) reduces.push_back(u);
  if (reduces.empty()) return std::nullopt;
  const UOp k = reduces[0].src().size() == 2 ? reduces[0].src(1) : UOp();
  if (!k || !k.src(0).is_const()) return std::nullopt;
  for (const UOp& red : reduces) {
    if (red.src().size() != 2 || !(red.src(1) == k)) return std::nullopt;
    for (const UOp& x : red.src(0).toposort())
      if (x.op() == Op::REDUCE) return std::nullopt;  // nested
  }
  const int64_t extent = k.src(0).const_int(), k_axis = k.arg_as<RangeArg>().axis;
  const int64_t elem = int64_t(itemsize(reduces[0].dtype().base()));
  for (int64_t lanes : kLaneCandidates) {
    const int64_t registers = (lanes * elem + target.simd_bytes - 1) / target.simd_bytes;
    if (registers > kMaxRegistersPerLaneVector || extent % lanes != 0 || extent < 2 * lanes)
      continue;
    std::optional<std::vector<Opt>> chosen;
    for (int64_t groups : kGroupCandidates) {
      if ((extent / lanes) % groups != 0) continue;
      std::vector<Opt> opts{{OptType::Unroll, k_axis, lanes}};
      if (groups > 1) opts.push_back({OptType::Unroll, k_axis, groups});
      const UOp expanded = expand_ranges(apply_opts(ast, opts), true);
      if (!has_lane_axis(expanded)) continue;
      if (!chosen) chosen = opts;
      if (!gated_per_iteration(expanded, k_axis)) {
        chosen = opts;
        break;
      }
    }
    if (!chosen) continue;
    const int64_t max_accumulators =
        std::max<int64_t>(1, vector_registers(target) / 2 / registers / int64_t(reduces.size()));
    for (const Opt& o : upcasts(reduce_work(ast, reduces, k), max_accumulators))
      chosen->push_back(o);
    return chosen;
  }
  return std::nullopt;
}

}  // namespace ugrad
