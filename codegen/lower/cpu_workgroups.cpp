#include "codegen/lower/cpu_workgroups.h"

#include <algorithm>

#include "base/error.h"
#include "codegen/opt/opt.h"
#include "codegen/ranges.h"
#include "uop/pattern_matcher.h"

namespace ugrad {

namespace {

struct WorkgroupCtx {
  std::vector<UOp> workgroup;  // the GLOBAL ranges (one may be the Thread axis by now)
  std::vector<UOp> locals;     // the LOCAL ranges of the kernel as written
  int64_t next_axis = 0;       // the next fresh axis id
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

// BARRIER(stores...) -> END(stores', l'...): the phase the stores end, as its own loops over
// the workitems (fresh copies l' of the LOCAL ranges the stores use).
std::optional<UOp> end_phase(const Match& m) {
  auto& ctx = m.ctx<WorkgroupCtx>();
  std::vector<UOp> stores;
  for (const UOp& s : m.root().src())
    if (s.op() == Op::STORE) stores.push_back(s);
  if (stores.empty()) return std::nullopt;
  const UOp body = stores.size() == 1 ? stores[0] : UOp::make(Op::GROUP, dtypes::void_, stores);
  std::vector<std::pair<UOp, UOp>> rename;
  std::vector<UOp> end_src{UOp()};
  for (const UOp& l : ctx.locals) {
    if (!depends_on(body, l)) continue;
    rename.emplace_back(l, UOp::range(l.src(0), ctx.next_axis++, AxisType::Local));
    end_src.push_back(rename.back().second);
  }
  if (rename.empty()) return body;  // one store per workgroup: in order already
  end_src[0] = body.substitute(rename);
  return UOp::make(Op::END, dtypes::void_, std::move(end_src));
}

const PatternMatcher& pm_cpu_workgroups() {
  static const PatternMatcher pm({
      {UPat(Op::INDEX, {UPat(Op::DEFINE_LOCAL).named("lds")}).any_len(), tie_to_workgroup},
      {UPat(Op::BARRIER), end_phase},
      // AFTER(x, BARRIER(x)): a barrier after reads only (end_phase took those with stores); the
      // phases already run one after another
      {UPat(Op::AFTER, {UPat::var("x"), UPat(Op::BARRIER)}),
       [](const Match& m) -> std::optional<UOp> { return m["x"]; }},
      {UPat(Op::WMMA),
       [](const Match&) -> std::optional<UOp> {
         fail(
             "codegen: the CPU cannot lower WMMA (a wave's 16x16x16 tensor-core tile); "
             "compile the kernel for a GPU");
       }},
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
  UOp out = ast;
  auto groups = [](const UOp& r) { return r.src(0).vmax(); };
  auto widest = std::max_element(ctx.workgroup.begin(), ctx.workgroup.end(),
                                 [&](const UOp& a, const UOp& b) { return groups(a) < groups(b); });
  // The cores take whole workgroups: workgroups never share memory, so any split is right.
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
