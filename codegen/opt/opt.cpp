#include "codegen/opt/opt.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "base/env.h"
#include "base/error.h"
#include "codegen/affine.h"
#include "codegen/lower/expand.h"
#include "codegen/lower/lower_reduce.h"
#include "codegen/opt/gemm_tiling.h"
#include "codegen/opt/lane_reduce.h"
#include "codegen/opt/pack.h"
#include "codegen/ranges.h"
#include "uop/symbolic.h"

namespace ugrad {

std::string to_string(const std::vector<Opt>& opts) {
  static constexpr const char* kNames[] = {"UPCAST", "UNROLL", "THREAD", "PACK", "SPLIT"};
  std::string s;
  for (const Opt& o : opts)
    s += fmt::format("{}{}({},{})", s.empty() ? "" : " ", kNames[int(o.type)], o.axis, o.amount);
  return s;
}

int64_t cpu_cores(int64_t max_threads) {
  if (max_threads > 0) return max_threads;
  const int64_t threads_knob = knob_int(Knob::THREADS);
  return threads_knob > 0 ? threads_knob
                          : std::max<int64_t>(1, std::thread::hardware_concurrency());
}

std::vector<UOp> kernel_ranges(const UOp& ast) {
  std::vector<UOp> ranges;
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::RANGE) ranges.push_back(u);
  std::sort(ranges.begin(), ranges.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<RangeArg>().axis < b.arg_as<RangeArg>().axis;
  });
  return ranges;
}

namespace {

UOp find_axis(const std::vector<UOp>& ranges, int64_t axis, const Opt& o) {
  for (const UOp& r : ranges)
    if (r.arg_as<RangeArg>().axis == axis) return r;
  fail("codegen: opt {} names axis {} which the kernel does not have", to_string({o}), axis);
}

// Rebuilds `ast` with `r` replaced by the expression `outer*amount + inner`; a REDUCE over `r`
// reduces over both `outer` and `inner` instead.
UOp split_range(const UOp& ast, const UOp& r, const UOp& outer, const UOp& inner, int64_t amount) {
  std::unordered_map<UOp, UOp> repl;
  repl.emplace(r, outer * amount + inner);
  for (const UOp& u : ast.toposort()) {
    if (u == r) continue;
    std::vector<UOp> src;
    for (size_t i = 0; i < u.src().size(); ++i) {
      const UOp& s = u.src(i);
      if (u.op() == Op::REDUCE && i > 0 && s == r) {
        src.push_back(outer);
        src.push_back(inner);
        continue;
      }
      auto it = repl.find(s);
      src.push_back(it == repl.end() ? s : it->second);
    }
    UOp n = u.replace_src(std::move(src));
    if (!(n == u)) repl.emplace(u, n);
  }
  auto it = repl.find(ast);
  return it == repl.end() ? ast : it->second;
}

// An axis of symbolic extent n split into ceil(n / amount) steps of `amount`: every access at n
// or past it is masked off (its load reads nothing, its store writes nothing), and a reduce over
// the axis adds its identity there.
UOp mask_tail(const UOp& ast, const UOp& outer, const UOp& inner, const UOp& n, int64_t amount) {
  const UOp valid = (outer * amount + inner).lt(n);
  std::vector<std::pair<UOp, UOp>> repl;
  for (const UOp& u : ast.toposort()) {
    if (u.op() == Op::INDEX && depends_on(u, outer)) {
      std::vector<UOp> src = u.src();
      if (src.size() > 2)
        src[2] = src[2].alu(Op::AND, valid);
      else
        src.push_back(valid);
      repl.emplace_back(u, u.replace_src(std::move(src)));
    }
  }
  UOp gated = ast.substitute(repl);
  repl.clear();
  for (const UOp& red : gated.toposort())
    if (red.op() == Op::REDUCE &&
        std::find(red.src().begin() + 1, red.src().end(), outer) != red.src().end()) {
      std::vector<UOp> src = red.src();
      src[0] = valid.where(src[0], reduce_identity(red.arg_as<Op>(), red.dtype()));
      repl.emplace_back(red, red.replace_src(std::move(src)));
    }
  return gated.substitute(repl);
}

UOp apply_opt(const UOp& ast, const Opt& o) {
  std::vector<UOp> ranges = kernel_ranges(ast);
  UOp r = find_axis(ranges, o.axis, o);
  const RangeArg ra = r.arg_as<RangeArg>();
  if (o.amount < 1) fail("codegen: opt {}: amount must be positive", to_string({o}));
  if (o.type == OptType::Pack) {
    UOp packed = pack_operand(ast, r);
    if (packed == ast) fail("codegen: opt {}: no reduce operand to pack", to_string({o}));
    return packed;
  }
  if (o.type == OptType::Thread) {
    if (ra.type != AxisType::Loop)
      fail("codegen: opt {}: only an output loop axis can be threaded", to_string({o}));
    return ast.substitute({{r, UOp::range(r.src(0), ra.axis, AxisType::Thread)}});
  }
  const bool upcast = o.type == OptType::Upcast, split = o.type == OptType::Split;
  if (upcast || split ? (ra.type != AxisType::Loop && ra.type != AxisType::Thread)
                      : ra.type != AxisType::Reduce)
    fail("codegen: opt {}: axis {} is a {} axis", to_string({o}), o.axis, axis_type_name(ra.type));
  const int64_t fresh = ranges.back().arg_as<RangeArg>().axis + 1;
  UOp inner = UOp::range(o.amount, fresh,
                         split    ? AxisType::Loop
                         : upcast ? AxisType::Upcast
                                  : AxisType::Unroll);
  if (!r.src(0).is_const() && !split) {
    const UOp n = r.src(0), step = UOp::cnst_int(dtypes::index, o.amount);
    UOp outer = UOp::range(simplify((n + (o.amount - 1)).idiv(step)), ra.axis, ra.type);
    return mask_tail(split_range(ast, r, outer, inner, o.amount), outer, inner, n, o.amount);
  }
  if (!r.src(0).is_const() || r.src(0).const_int() % o.amount != 0)
    fail("codegen: opt {}: amount does not divide the axis extent {}", to_string({o}),
         r.src(0).render());
  UOp outer = UOp::range(r.src(0).const_int() / o.amount, ra.axis, ra.type);
  return split_range(ast, r, outer, inner, o.amount);
}

int64_t extent(const UOp& r) {
  return r.src(0).is_const() ? r.src(0).const_int() : r.src(0).vmax();
}

int64_t largest_divisor(int64_t n, std::initializer_list<int64_t> candidates) {
  for (int64_t c : candidates)
    if (n % c == 0 && n > c) return c;
  return 1;
}

// Every load steps by 0 or 1 element along `r`: upcasting r gives vector loads, not gathers.
bool contiguous_loads(const UOp& ast, const UOp& r) {
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::LOAD) {
      auto c = affine_coefficient(u.src(0).src(1), r);
      if (!c || (*c != 0 && *c != 1)) return false;
    }
  return true;
}

// Output axes that the loads of the largest input buffer depend on: threading one of them makes
// it the outermost loop, so each part of that buffer (a weight bigger than the caches) is read
// from memory once instead of once per tile of the other output axes.
std::vector<int64_t> largest_input_axes(const UOp& ast) {
  const RangeMap open = open_ranges(ast);
  UOp largest;
  int64_t most = 0;
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::LOAD || u.src(0).src(0).op() != Op::PARAM) continue;
    const UOp& buf = u.src(0).src(0);
    const int64_t bytes = buf.arg_as<ParamArg>().hi * int64_t(itemsize(buf.dtype().base()));
    if (bytes > most) most = bytes, largest = buf;
  }
  std::vector<int64_t> axes;
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::LOAD && u.src(0).src(0) == largest)
      for (const UOp& r : open.at(u))
        if (r.arg_as<RangeArg>().type == AxisType::Loop) axes.push_back(r.arg_as<RangeArg>().axis);
  return axes;
}

}  // namespace

UOp apply_opts(const UOp& ast, const std::vector<Opt>& opts) {
  UOp out = ast;
  for (const Opt& o : opts) out = apply_opt(out, o);
  return out;
}

std::vector<Opt> heuristic_opts(const UOp& ast, const CodegenTarget& target, int64_t max_threads) {
  std::vector<Opt> opts;
  if (target.is_gpu) return opts;  // TODO: GPU locals/upcasts belong to the AMDGPU issue
  auto tiled = gemm_tiling_opts(ast, target);
  if (tiled) opts = *tiled;
  // The loops after the tiling (a PACK is applied once the threaded axis is known).
  std::vector<Opt> loops_only = opts;
  std::erase_if(loops_only, [](const Opt& o) { return o.type == OptType::Pack; });
  std::vector<UOp> ranges = kernel_ranges(apply_opts(ast, loops_only));
  std::vector<UOp> outs, reds;
  int64_t work = 1;
  for (const UOp& r : ranges) {
    const AxisType t = r.arg_as<RangeArg>().type;
    if (t == AxisType::Loop) outs.push_back(r);
    if (t == AxisType::Reduce) reds.push_back(r);
    work *= std::max<int64_t>(extent(r), 1);
  }
  if (opts.empty() && !reds.empty() && !outs.empty() && outs.back().src(0).is_const() &&
      contiguous_loads(ast, outs.back())) {
    // Reduce over an outer axis (the inner output axis is contiguous): accumulate vector lanes.
    int64_t n = largest_divisor(outs.back().src(0).const_int(), {16, 8, 4});
    if (n > 1 && extent(reds.back()) >= 8)
      opts.push_back({OptType::Upcast, outs.back().arg_as<RangeArg>().axis, n});
  }
  if (opts.empty() && reds.empty() && !outs.empty()) {
    // Elementwise along the inner axis: vector lanes when, split, every store and load along them
    // is contiguous (a RoPE's table index i % 64 is, within 16 lanes). A symbolic extent (a
    // softmax over the positions so far) takes 16, its last step masked.
    const UOp& extent = outs.back().src(0);
    const int64_t n = extent.is_const() ? largest_divisor(extent.const_int(), {16, 8, 4}) : 16;
    const std::vector<Opt> up{{OptType::Upcast, outs.back().arg_as<RangeArg>().axis, n}};
    if (n > 1) {  // the expander keeps the lanes only along contiguous stores
      const UOp split =
          expand_ranges(graph_rewrite(apply_opts(ast, up), pm_simplify_valid()), true);
      for (const UOp& r : kernel_ranges(split))
        if (r.arg_as<RangeArg>().type == AxisType::Upcast && contiguous_loads(split, r)) opts = up;
    }
  }
  bool laned = false;
  if (opts.empty() && !reds.empty()) {
    // Reduce over a contiguous axis (dot products): vector lanes along it.
    if (auto lanes = lane_reduce_opts(ast, target)) {
      laned = true;
      opts = *lanes;
      std::vector<UOp> split = kernel_ranges(apply_opts(ast, opts));
      outs.clear();
      for (const UOp& r : split)
        if (r.arg_as<RangeArg>().type == AxisType::Loop) outs.push_back(r);
    }
  }
  if (opts.empty() && reds.size() == 1 && !reds[0].src(0).is_const() &&
      contiguous_loads(ast, reds[0])) {
    // A reduce over a symbolic length (attention's softmax over the positions so far): vector
    // lanes along it, the last step masked.
    int64_t widest = 1;
    for (const UOp& u : ast.toposort())
      if (u.op() == Op::REDUCE) widest = std::max<int64_t>(widest, itemsize(u.dtype().base()));
    opts.push_back({OptType::Unroll, reds[0].arg_as<RangeArg>().axis, target.simd_bytes / widest});
  }

  // Threads over one output loop when each core gets enough work: for a GEMM tile the loop
  // over column tiles if there is one per core (each core keeps its panel of B in cache), for a
  // dot product the loop the weight depends on, else the outermost. Work counts value ops per
  // iteration too: a 64K-element RoPE or SiLU kernel is worth two cores where a 64K-element add
  // is not.
  constexpr int64_t kMinWorkPerThread = 1 << 18;
  int64_t ops = 0;
  for (const UOp& u : ast.toposort())
    ops += (is_alu(u.op()) || u.op() == Op::LOAD) && u.dtype().scalar != Scalar::Index;
  work *= std::max<int64_t>(ops, 1);
  const int64_t cores = cpu_cores(max_threads);
  if (!outs.empty()) {
    UOp outer = outs.front();
    auto vec = std::find_if(opts.rbegin(), opts.rend(),
                            [](const Opt& o) { return o.type == OptType::Upcast; });
    if (tiled && vec != opts.rend())
      for (const UOp& r : outs)
        if (r.arg_as<RangeArg>().axis == vec->axis && extent(r) >= cores) outer = r;
    if (laned) {  // dot products: the largest operand (the weight) is read once
      // The outermost such axis: threads over the heads of a key cache each stream whole heads,
      // over its positions each would stream every head at once (decode attention's scores ran
      // 25% faster at 2048 positions, bench_attention).
      const std::vector<int64_t> axes = largest_input_axes(ast);
      const int64_t enough = std::min(cores, extent(outer));
      auto it = std::find_if(outs.begin(), outs.end(), [&](const UOp& r) {
        return std::find(axes.begin(), axes.end(), r.arg_as<RangeArg>().axis) != axes.end() &&
               extent(r) >= enough;
      });
      if (it != outs.end()) outer = *it;
    }
    int64_t n = std::min({cores, extent(outer), work / kMinWorkPerThread});
    // Before a PACK: which loops are outside the packed rows depends on the threaded axis.
    auto pack = std::find_if(opts.begin(), opts.end(),
                             [](const Opt& o) { return o.type == OptType::Pack; });
    if (n >= 2) opts.insert(pack, {OptType::Thread, outer.arg_as<RangeArg>().axis, n});
  }
  return opts;
}

}  // namespace ugrad
