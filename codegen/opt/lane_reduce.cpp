#include "codegen/opt/lane_reduce.h"

#include <algorithm>
#include <map>

#include "codegen/lower/expand.h"
#include "codegen/ranges.h"

namespace ugrad {

namespace {

// Lane counts tried (widest first); at most this many vector registers of lanes.
constexpr int64_t kLaneCandidates[] = {32, 16, 8};
constexpr int64_t kMaxRegistersPerLaneVector = 4;
// Lane groups unrolled per iteration, fewest first.
constexpr int64_t kGroupCandidates[] = {1, 2, 4, 8, 16};
// Copies of one output axis, and the least work a doubling must save to be worth its code (a
// matvec's copies share only the load of x, ~1% of its work: no gain measured; a 32-row Q4_K
// matmul's second output shares 4.6% and runs 7% faster with it).
constexpr int64_t kMaxUpcast = 8;
constexpr double kMinSaving = 0.04;
// In a tile of rows and outputs, a load costs this many ALU ops per byte it reads per element: a
// tile of 8 rows of float32 activations is read from L2 again for each pair of outputs, and a cheap
// dequantization (Q8_0) is worth repeating for more outputs instead (a 32-row Q8_0 matmul ran 1.56x
// faster as 4 rows x 4 outputs than as 8 x 2; a Q4_K one, with 73 ops of dequantization per
// element, 1.45x slower). A matvec's one row of x stays in L1: its loads cost 1 (weighted, its
// copies of the outputs ran IQ4_XS 22% slower).
constexpr double kOpsPerLoadedByte = 3;

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

// Divisions and remainders that change every iteration of the reduce loop `axis`, per lane group:
// a quant block's sub-block index math, which folds to constants once the groups of one
// iteration span the block (lanes x groups = block size).
double divmods_per_group(const UOp& expanded, int64_t axis, int64_t groups) {
  const RangeMap open = open_ranges(expanded);
  int64_t n = 0;
  for (const UOp& u : expanded.toposort()) {
    if (u.op() != Op::IDIV && u.op() != Op::MOD) continue;
    for (const UOp& r : open.at(u))
      if (r.arg_as<RangeArg>().axis == axis) {
        ++n;
        break;
      }
  }
  return double(n) / double(groups);
}

// Work per reduce step for each output axis: nodes of the reduced values (loads and arithmetic,
// not index math) that depend on the reduce axis, with the output axes each depends on.
struct Work {
  std::vector<UOp> axes;                // output loop ranges with constant extents
  std::vector<std::vector<bool>> uses;  // per node: which of `axes` it depends on
  std::vector<double> ops;              // per node: its cost in ALU ops
  int64_t shared_loads = 0;             // loads that depend on none of `axes`: every copy's values
};

Work reduce_work(const UOp& ast, const std::vector<UOp>& reduces) {
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
      const UOp& k = red.src(1);
      if (seen[u.node()] || u.dtype() == dtypes::index) continue;
      seen[u.node()] = true;
      if (u.op() != Op::LOAD && !is_alu(u.op())) continue;
      const std::vector<UOp>& rs = open.at(u);
      if (std::find(rs.begin(), rs.end(), k) == rs.end()) continue;  // hoisted out of the loop
      std::vector<bool> uses;
      for (const UOp& a : w.axes) uses.push_back(std::find(rs.begin(), rs.end(), a) != rs.end());
      if (u.op() == Op::LOAD && std::find(uses.begin(), uses.end(), true) == uses.end())
        ++w.shared_loads;
      w.uses.push_back(std::move(uses));
      w.ops.push_back(u.op() == Op::LOAD && w.axes.size() >= 2
                          ? kOpsPerLoadedByte * double(itemsize(u.dtype().base()))
                          : 1.0);
    }
  return w;
}

// Work per output element when axis i has up[i] copies: a node is shared by the copies of every
// axis it does not depend on.
double cost(const Work& w, const std::vector<int64_t>& up) {
  double c = 0;
  for (size_t n = 0; n < w.uses.size(); ++n) {
    double shared = 1;
    for (size_t i = 0; i < up.size(); ++i)
      if (!w.uses[n][i]) shared *= double(up[i]);
    c += w.ops[n] / shared;
  }
  return c;
}

// Greedy doubling of output-axis copies while it saves enough work and the accumulators fit.
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
      const double c = cost(w, trial);
      if (c <= now * (1 - kMinSaving) && c < best_cost) best = int(i), best_cost = c;
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

// Per reduce range: `lanes` lanes, then the fewest lane groups that keep them (ungated if
// possible); nullopt when some range cannot have them.
std::optional<std::vector<Opt>> lane_opts(const UOp& ast, const std::vector<UOp>& ranges,
                                          int64_t lanes) {
  std::vector<Opt> opts;
  for (const UOp& k : ranges) {
    const int64_t extent = k.src(0).const_int(), axis = k.arg_as<RangeArg>().axis;
    // Among ungated group counts, the fewest divisions per group (ties: fewer groups); with
    // every count gated, the fewest groups that keep the lanes.
    std::optional<std::vector<Opt>> chosen;
    bool chosen_ungated = false;
    double chosen_divmods = 0;
    for (int64_t groups : kGroupCandidates) {
      if (extent % lanes != 0 || (extent / lanes) % groups != 0) continue;
      std::vector<Opt> trial{{OptType::Unroll, axis, lanes}};
      if (groups > 1) trial.push_back({OptType::Unroll, axis, groups});
      const UOp expanded = expand_ranges(apply_opts(ast, trial), true);
      // Groups lie outside the lanes: lanes that one group cannot keep, more cannot either
      // (trying them all cost a Q4_K DOT4 matvec ~0.4 s of compile).
      if (!has_lane_axis(expanded)) {
        if (groups == 1) break;
        continue;
      }
      if (!chosen) chosen = trial;
      if (gated_per_iteration(expanded, axis)) continue;
      const double divmods = divmods_per_group(expanded, axis, groups);
      if (!chosen_ungated || divmods < chosen_divmods) {
        chosen = trial;
        chosen_ungated = true;
        chosen_divmods = divmods;
      }
      // Counts come fewest first: an ungated one without divisions cannot be beaten (each
      // expansion tried costs a large kernel's compile tens of milliseconds).
      if (chosen_ungated && chosen_divmods == 0) break;
    }
    if (!chosen) return std::nullopt;
    opts.insert(opts.end(), chosen->begin(), chosen->end());
  }
  return opts;
}

}  // namespace

std::optional<std::vector<Opt>> lane_reduce_opts(const UOp& ast, const CodegenTarget& target) {
  if (target.is_gpu) return std::nullopt;
  std::vector<UOp> reduces, ranges;  // every REDUCE, and their ranges (one each)
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::REDUCE) continue;
    if (u.src().size() != 2 || !u.src(1).src(0).is_const()) return std::nullopt;
    for (const UOp& x : u.src(0).toposort())
      if (x.op() == Op::REDUCE) return std::nullopt;  // nested
    reduces.push_back(u);
    if (std::find(ranges.begin(), ranges.end(), u.src(1)) == ranges.end())
      ranges.push_back(u.src(1));
  }
  if (reduces.empty()) return std::nullopt;
  int64_t sharing = 0;  // most reduces in one loop (their accumulators are live together)
  for (const UOp& k : ranges)
    sharing = std::max<int64_t>(
        sharing,
        std::count_if(reduces.begin(), reduces.end(), [&](const UOp& r) { return r.src(1) == k; }));
  const int64_t elem = int64_t(itemsize(reduces[0].dtype().base()));
  // Every lane count that fits, each with its lane groups and upcasts. The most copies sharing
  // each value wins (narrower lanes leave registers for more accumulators: a 32-row Q4_K matmul
  // as 8 rows x 2 outputs of 16 lanes ran 1.6x faster than 4 x 1 of 32); ties go to the widest
  // (a matvec's one accumulator of 32 lanes is two independent FMA chains).
  std::optional<std::vector<Opt>> best;
  int64_t best_copies = 0;
  const Work work = reduce_work(ast, reduces);
  for (int64_t lanes : kLaneCandidates) {
    const int64_t registers = (lanes * elem + target.simd_bytes - 1) / target.simd_bytes;
    if (registers > kMaxRegistersPerLaneVector) continue;
    std::optional<std::vector<Opt>> opts = lane_opts(ast, ranges, lanes);
    if (!opts) continue;
    int64_t max_accumulators =
        std::max<int64_t>(1, vector_registers(target) / 2 / registers / sharing);
    // A matvec's copies of its one output axis share, within an iteration, the vectors every
    // output loads (x's): where those of all lane groups and two copies' accumulators overflow
    // the registers, no copies (a Q8_0 matvec of 2048 inputs as 4 outputs of 32 lanes, sharing
    // x's 16 words and 4 sums, spilled a 9 KB frame and ran 1.4x slower than with 16 lanes).
    int64_t unrolled = 1;
    for (const Opt& o : *opts) unrolled *= o.amount;
    if (work.axes.size() == 1 &&
        registers * (work.shared_loads * unrolled / lanes + 2 * sharing) > vector_registers(target))
      max_accumulators = 1;
    int64_t copies = 1;
    for (const Opt& o : upcasts(work, max_accumulators)) {
      opts->push_back(o);
      copies *= o.amount;
    }
    if (copies > best_copies) best = std::move(opts), best_copies = copies;
  }
  return best;
}

}  // namespace ugrad
