#include "codegen/lower/cpu_workgroups.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "codegen/opt/opt.h"
#include "codegen/opt/tensor_cores.h"
#include "codegen/ranges.h"
#include "uop/pattern_matcher.h"

namespace ugrad {

namespace {

UOp idx(int64_t v) { return UOp::cnst_int(dtypes::index, v); }

struct WorkgroupCtx {
  std::vector<UOp> workgroup;  // the GLOBAL ranges (one may be the Thread axis by now)
  std::vector<UOp> locals;     // the LOCAL ranges of the kernel as written
  int64_t next_axis = 0;       // the next fresh axis id
  std::set<std::pair<Scalar, int64_t>> lds_sizes;  // of the DEFINE_LOCALs (interned by size)

  // END(body', l'...): `body` as its own loops over fresh copies l' of the LOCAL ranges it uses.
  UOp phase(const UOp& body) {
    std::vector<std::pair<UOp, UOp>> rename;
    std::vector<UOp> end_src{UOp()};
    for (const UOp& l : locals) {
      if (!depends_on(body, l)) continue;
      rename.emplace_back(l, UOp::range(l.src(0), next_axis++, AxisType::Local));
      end_src.push_back(rename.back().second);
    }
    if (rename.empty()) return body;  // one store per workgroup: in order already
    end_src[0] = body.substitute(rename);
    return UOp::make(Op::END, dtypes::void_, std::move(end_src));
  }

  // A new local array of `count` elements (or a few more: equal DEFINE_LOCALs are one array).
  UOp scratch(DType dtype, int64_t count) {
    while (!lds_sizes.insert({dtype.scalar, count}).second) ++count;
    return UOp::make(Op::DEFINE_LOCAL, dtype.ptr(AddrSpace::Local), {}, count);
  }
};

// INDEX(d, i) -> INDEX(AFTER(d, workgroup...), i) for an LDS array d: its accesses stay inside
// the workgroup loops (a phase that does not read the workgroup id still runs once per group).
std::optional<UOp> tie_to_workgroup(const Match& m) {
  const auto& ctx = m.ctx<WorkgroupCtx>();
  if (ctx.workgroup.empty()) return std::nullopt;
  const UOp& lds = m["lds"];
  std::vector<UOp> after{lds};
  after.insert(after.end(), ctx.workgroup.begin(), ctx.workgroup.end());
  std::vector<UOp> src = m.root().src();
  src[0] = UOp::make(Op::AFTER, lds.dtype(), std::move(after));
  return m.root().replace_src(std::move(src));
}

// BARRIER(stores...) -> the phase the stores end, as its own loops over the workitems.
std::optional<UOp> end_phase(const Match& m) {
  std::vector<UOp> stores;
  for (const UOp& s : m.root().src())
    if (s.op() == Op::STORE) stores.push_back(s);
  if (stores.empty()) return std::nullopt;
  return m.ctx<WorkgroupCtx>().phase(
      stores.size() == 1 ? stores[0] : UOp::make(Op::GROUP, dtypes::void_, stores));
}

// Element i of an explicit vector.
UOp element(const UOp& v, int64_t i) {
  if (v.op() == Op::VECTORIZE) return v.src(i);
  return UOp::make(Op::GEP, v.dtype().base(), {v}, std::vector<int64_t>{i});
}

// WMMA(a, b, c) per lane (layout: tensor_cores.h): the wave's fragments go through two local
// arrays in a phase of their own, then lane L of the wave that starts at workitem w computes
//   d[i] = c[i] + sum_k A[2i + L/16][k] * B[k][L%16]    A[r][k] = a[k] of lane w+r,
//                                                       B[k][n] = b[k] of lane w+n
// in f32 (exact products of f16/bf16; the order of the sum may differ from the GPU's).
std::optional<UOp> wmma_per_lane(const Match& m) {
  auto& ctx = m.ctx<WorkgroupCtx>();
  const UOp &a = m.root().src(0), &b = m.root().src(1), &c = m.root().src(2);
  UOp flat = idx(0);  // the workitem id: the first LOCAL range fastest (gpu_dims' dim order)
  int64_t workitems = 1;
  for (const UOp& l : ctx.locals) {
    if (!l.src(0).is_const()) fail("codegen: a WMMA in a workgroup of symbolic size");
    flat = flat + l * workitems;
    workitems *= l.src(0).const_int();
  }
  if (workitems % kWmmaWave != 0)
    fail("codegen: the CPU lowers WMMA for whole waves of {} workitems, not a workgroup of {}",
         kWmmaWave, workitems);
  const UOp fa = ctx.scratch(a.dtype().base(), workitems * kWmmaTile),
            fb = ctx.scratch(b.dtype().base(), workitems * kWmmaTile);
  std::vector<UOp> stores;
  for (int64_t j = 0; j < kWmmaTile; ++j)
    for (const auto& [frag, v] : {std::pair{fa, a}, std::pair{fb, b}})
      stores.push_back(UOp::make(
          Op::STORE, dtypes::void_,
          {UOp::make(Op::INDEX, frag.dtype(), {frag, flat * kWmmaTile + j}), element(v, j)}));
  const UOp done = ctx.phase(UOp::make(Op::GROUP, dtypes::void_, stores));
  const UOp lane = flat % kWmmaWave, wave = flat - lane;
  auto frag_at = [&](const UOp& frag, const UOp& owner, int64_t k) {
    UOp after = UOp::make(Op::AFTER, frag.dtype(), {frag, done});
    UOp ld = UOp::make(Op::LOAD, frag.dtype().base(),
                       {UOp::make(Op::INDEX, frag.dtype(), {after, owner * kWmmaTile + k})});
    return ld.cast(dtypes::float32);
  };
  std::vector<UOp> d;
  for (int64_t i = 0; i < c.dtype().count; ++i) {
    UOp sum = element(c, i);
    for (int64_t k = 0; k < kWmmaTile; ++k)
      sum = sum + frag_at(fa, wave + lane.idiv(kWmmaTile) + 2 * i, k) *
                      frag_at(fb, wave + lane % kWmmaTile, k);
    d.push_back(sum);
  }
  return UOp::make(Op::VECTORIZE, c.dtype(), std::move(d));
}

const PatternMatcher& pm_cpu_workgroups() {
  static const PatternMatcher pm({
      {UPat(Op::INDEX, {UPat(Op::DEFINE_LOCAL).named("lds")}).any_len(), tie_to_workgroup},
      {UPat(Op::BARRIER), end_phase},
      // AFTER(x, BARRIER(x)): a barrier after reads only (end_phase took those with stores); the
      // phases already run one after another
      {UPat(Op::AFTER, {UPat::var("x"), UPat(Op::BARRIER)}),
       [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
      {UPat(Op::WMMA), wmma_per_lane},
  });
  return pm;
}

}  // namespace

UOp cpu_workgroups(const UOp& ast, int64_t cores, int64_t& cpu_threads) {
  WorkgroupCtx ctx;
  const std::vector<UOp> ranges = kernel_ranges(ast);
  bool threaded = false;
  for (const UOp& r : ranges) {
    const AxisType t = r.arg_as<RangeArg>().type;
    if (t == AxisType::Global) ctx.workgroup.push_back(r);
    if (t == AxisType::Local) ctx.locals.push_back(r);
    threaded |= t == AxisType::Thread;
  }
  ctx.next_axis = ranges.empty() ? 0 : ranges.back().arg_as<RangeArg>().axis + 1;
  bool gpu_pieces = !ctx.workgroup.empty() || !ctx.locals.empty();
  for (const UOp& u : ast.toposort()) {
    if (u.op() == Op::DEFINE_LOCAL) ctx.lds_sizes.insert({u.dtype().scalar, u.arg_as<int64_t>()});
    gpu_pieces |= u.op() == Op::BARRIER || u.op() == Op::WMMA;
  }
  if (!gpu_pieces) return ast;  // not hand-written: its packed operands stay as they are
  UOp out = ast;
  auto groups = [](const UOp& r) { return r.src(0).vmax(); };
  auto widest = std::max_element(ctx.workgroup.begin(), ctx.workgroup.end(),
                                 [&](const UOp& a, const UOp& b) { return groups(a) < groups(b); });
  // The cores take whole workgroups: a GPU runs them in no given order either.
  if (!threaded && widest != ctx.workgroup.end() && std::min(cores, groups(*widest)) > 1) {
    const UOp thread =
        UOp::range(widest->src(0), widest->arg_as<RangeArg>().axis, AxisType::Thread);
    out = out.substitute({{*widest, thread}});
    cpu_threads = std::min(cores, groups(*widest));
    *widest = thread;
  }
  return graph_rewrite(out, pm_cpu_workgroups(), &ctx);
}

}  // namespace ugrad
