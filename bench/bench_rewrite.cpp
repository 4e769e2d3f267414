// graph_rewrite throughput with pm_symbolic on a large graph of index expressions (nodes/s, against
// a plain toposort of the same graph), and the cost of interning a node (fresh vs already interned,
// against std::unordered_map insertion and lookup of the same count).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "uop/symbolic.h"

using namespace ugrad;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kExpressions = 4000;
constexpr int kRuns = 5;
constexpr int kInternNodes = 1 << 20;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Index math as a scheduler makes it: linear indices over ranges re-split by div/mod (reshapes),
// shifted and clamped (pads), compared (gates), with a few shared subexpressions.
UOp index_graph() {
  std::vector<UOp> ranges;
  for (int64_t axis = 0; axis < 6; ++axis) ranges.push_back(UOp::range(int64_t(2) << axis, axis));
  UOp n = UOp::variable("start_pos", 0, 4096);
  std::vector<UOp> outs;
  for (int k = 0; k < kExpressions; ++k) {
    const UOp& a = ranges[size_t(k % 6)];
    const UOp& b = ranges[size_t((k / 6) % 6)];
    const UOp& c = ranges[size_t((k / 36) % 6)];
    int64_t s = 2 + k % 5, t = 1 + k % 7;
    UOp flat = (a * (s * 8) + b * s + c) + n * 64 + (k % 11);
    UOp idx = (flat.idiv(s) % 64) * t + (flat % s) + (a + b).idiv(1 << (k % 4)) * 0;
    UOp gate = (flat - 3).lt(4096).alu(Op::AND, (c * 2 + 1).lt(int64_t(k % 9)));
    outs.push_back(gate.where(idx + (k % 3 == 0 ? n - n : n.idiv(4096)), idx.const_int_like(0)));
  }
  return UOp::make(Op::SINK, dtypes::void_, std::move(outs));
}

void bench_rewrite() {
  UOp g = index_graph();
  size_t nodes = g.toposort().size();
  // baseline: a walk over the same graph
  double walk = 1e30;
  for (int i = 0; i < kRuns; ++i) {
    auto t0 = Clock::now();
    size_t n = g.toposort().size();
    walk = std::min(walk, seconds_since(t0));
    if (n != nodes) fmt::print("unexpected node count\n");
  }
  double first = 0, best = 1e30;
  size_t after = 0;
  for (int i = 0; i < kRuns; ++i) {
    auto t0 = Clock::now();
    UOp s = graph_rewrite(g, pm_symbolic());
    double dt = seconds_since(t0);
    if (i == 0) first = dt;
    best = std::min(best, dt);
    after = s.toposort().size();
  }
  fmt::print("graph_rewrite(pm_symbolic): {} nodes -> {} nodes\n", nodes, after);
  fmt::print("  first run  {:8.2f} ms  {:10.0f} nodes/s\n", first * 1e3, double(nodes) / first);
  fmt::print("  best run   {:8.2f} ms  {:10.0f} nodes/s (bounds cached on the nodes)\n", best * 1e3,
             double(nodes) / best);
  fmt::print("  baseline toposort {:8.3f} ms  {:10.0f} nodes/s; rewrite/toposort = {:.0f}x\n",
             walk * 1e3, double(nodes) / walk, best / walk);
}

void bench_intern() {
  UOp x = UOp::variable("intern_x", 0, 1 << 30);
  std::vector<UOp> consts;
  consts.reserve(kInternNodes);
  for (int i = 0; i < kInternNodes; ++i) consts.push_back(UOp::cnst_int(dtypes::index, i));
  std::vector<UOp> made;
  made.reserve(kInternNodes);
  auto t0 = Clock::now();
  for (int i = 0; i < kInternNodes; ++i)
    made.push_back(UOp::make(Op::ADD, dtypes::index, {x, consts[size_t(i)]}));
  double fresh = seconds_since(t0);
  size_t same = 0;
  t0 = Clock::now();
  for (int i = 0; i < kInternNodes; ++i)
    same += UOp::make(Op::ADD, dtypes::index, {x, consts[size_t(i)]}) == made[size_t(i)];
  double lookup = seconds_since(t0);
  if (same != size_t(kInternNodes)) fmt::print("interning is broken\n");
  made.clear();

  // baseline: a hash map from the same number of 64-bit keys
  std::unordered_map<uint64_t, uint64_t> map;
  t0 = Clock::now();
  for (uint64_t i = 0; i < uint64_t(kInternNodes); ++i) map.emplace(i * 0x9e3779b97f4a7c15ull, i);
  double map_insert = seconds_since(t0);
  uint64_t sum = 0;
  t0 = Clock::now();
  for (uint64_t i = 0; i < uint64_t(kInternNodes); ++i)
    sum += map.find(i * 0x9e3779b97f4a7c15ull)->second;
  double map_find = seconds_since(t0);
  if (sum == 0) fmt::print("unexpected\n");

  double n = kInternNodes;
  fmt::print("interning {} nodes:\n", kInternNodes);
  fmt::print("  fresh      {:6.1f} ns/node   (unordered_map insert {:6.1f} ns: {:.1f}x)\n",
             fresh / n * 1e9, map_insert / n * 1e9, fresh / map_insert);
  fmt::print("  existing   {:6.1f} ns/node   (unordered_map find   {:6.1f} ns: {:.1f}x)\n",
             lookup / n * 1e9, map_find / n * 1e9, lookup / map_find);
}

}  // namespace

// Optional argument: "rewrite" or "intern" runs only that part (for profiling).
int main(int argc, char** argv) {
  std::string_view only = argc > 1 ? argv[1] : "";
  if (only.empty() || only == "rewrite") bench_rewrite();
  if (only.empty() || only == "intern") bench_intern();
  return 0;
}
