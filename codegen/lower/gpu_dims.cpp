#include "codegen/lower/gpu_dims.h"

#include <algorithm>
#include <unordered_set>

#include "base/error.h"
#include "codegen/opt/opt.h"
#include "uop/symbolic.h"

namespace ugrad {

namespace {

UOp idx(int64_t v) { return UOp::cnst_int(dtypes::index, v); }

std::string fmt_dim(const char* kind, size_t d) { return kind + std::to_string(d); }

int64_t max_of(const UOp& extent) {
  return extent.is_const() ? extent.const_int() : int64_t(extent.vmax());
}

int64_t pow2_ceil(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// One launch dim: the ranges merged into it (outer first) and its local size.
struct Dim {
  std::vector<UOp> ranges;
  int64_t local = 1;
  UOp local_range;  // explicit mode: the Local range that is lidx (else null)
  UOp extent() const {
    UOp e = idx(1);
    for (const UOp& r : ranges) e = e * r.src(0);
    return simplify(e);
  }
};

// ceil(e / l) as an index UOp.
UOp ceil_div(const UOp& e, int64_t l) {
  if (e.is_const()) return idx((e.const_int() + l - 1) / l);
  return l == 1 ? e : (e + (l - 1)).idiv(l);
}

// Auto mode: innermost loop -> x, next -> y, the rest merged into z; locals fill x first.
std::vector<Dim> auto_dims(const std::vector<UOp>& loops) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < loops.size(); ++i) {
    const UOp& r = loops[loops.size() - 1 - i];
    if (dims.size() < 3)
      dims.push_back({{r}, 1, UOp()});
    else
      dims[2].ranges.insert(dims[2].ranges.begin(), r);
  }
  int64_t budget = kDefaultLocalThreads;
  for (Dim& d : dims) {
    d.local = std::min(budget, pow2_ceil(std::max<int64_t>(1, max_of(d.extent()))));
    budget /= d.local;
  }
  // y and z hold at most 65535 workgroups: fold an oversized one into x (outer part).
  for (size_t i = dims.size(); i-- > 1;) {
    if (max_of(ceil_div(dims[i].extent(), dims[i].local)) <= kMaxGridYZ) continue;
    Dim& x = dims[0];
    x.ranges.insert(x.ranges.begin(), dims[i].ranges.begin(), dims[i].ranges.end());
    dims.erase(dims.begin() + long(i));
  }
  return dims;
}

std::vector<Dim> explicit_dims(const std::vector<UOp>& locals, const std::vector<UOp>& globals,
                               const std::vector<UOp>& loops) {
  std::vector<Dim> dims(std::max(locals.size(), globals.size()));
  for (size_t i = 0; i < locals.size(); ++i) {
    if (!locals[i].src(0).is_const())
      fail("codegen: a local (workgroup) range needs a constant extent, axis {} has {}",
           locals[i].arg_as<RangeArg>().axis, locals[i].src(0).render());
    dims[i].local = locals[i].src(0).const_int();
    dims[i].local_range = locals[i];
  }
  for (size_t i = 0; i < globals.size(); ++i) dims[i].ranges.push_back(globals[i]);
  for (const UOp& r : loops) {
    if (dims.size() < 3)
      dims.push_back({{r}, 1, UOp()});
    else
      dims.back().ranges.insert(dims.back().ranges.begin(), r);
  }
  if (dims.size() > 3)
    fail("codegen: {} explicit launch dims, at most 3 (x, y, z) exist", dims.size());
  return dims;
}

}  // namespace

UOp gpu_special(const std::string& name, const UOp& extent) {
  return UOp::make(Op::SPECIAL, dtypes::index, {extent}, name);
}

int64_t gpu_local_threads(const GpuDims& dims) {
  int64_t n = 1;
  for (const UOp& l : dims.local_size) n *= l.const_int();
  return n;
}

UOp gpu_dims(const UOp& ast, const CodegenTarget& target, GpuDims& out) {
  (void)target;
  std::vector<UOp> loops, globals, locals;
  for (const UOp& r : kernel_ranges(ast)) {
    switch (r.arg_as<RangeArg>().type) {
      case AxisType::Loop:
      case AxisType::Thread:
        loops.push_back(r);
        break;
      case AxisType::Global:
        globals.push_back(r);
        break;
      case AxisType::Local:
      case AxisType::GroupReduce:
        locals.push_back(r);
        break;
      default:
        break;
    }
  }
  const bool explicit_mode = !globals.empty() || !locals.empty();
  std::vector<Dim> dims = explicit_mode ? explicit_dims(locals, globals, loops) : auto_dims(loops);

  std::vector<std::pair<UOp, UOp>> repl;
  out = {};
  int64_t threads = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const Dim& dim = dims[d];
    const UOp extent = dim.extent();
    const UOp groups = dim.local_range ? extent : ceil_div(extent, dim.local);
    const int64_t max_groups = max_of(groups);
    if (max_groups > (d == 0 ? kMaxGridX : kMaxGridYZ))
      fail("codegen: launch dim {} needs {} workgroups (at most {})", "xyz"[d], max_groups,
           d == 0 ? kMaxGridX : kMaxGridYZ);
    threads *= dim.local;
    out.global_size.push_back(groups);
    out.local_size.push_back(idx(dim.local));
    const UOp gid = gpu_special(fmt_dim("gidx", d), groups);
    const UOp lid = gpu_special(fmt_dim("lidx", d), idx(dim.local));
    if (dim.local_range) {
      // Explicit: the Local range is the workitem id, Global ranges the workgroup id.
      repl.emplace_back(dim.local_range, lid);
    }
    UOp flat = dim.local_range || dim.local == 1 ? gid : gid * dim.local + lid;
    if (!dim.local_range && !(extent.is_const() && extent.const_int() % dim.local == 0)) {
      UOp in_range = flat.lt(extent);
      out.guard = out.guard ? out.guard.alu(Op::AND, in_range) : in_range;
    }
    // Merged ranges, outer first: r_inner = flat % e_inner, r_next = flat / e_inner % e_next, ...
    UOp rest = flat;
    for (size_t i = dim.ranges.size(); i-- > 0;) {
      const UOp& r = dim.ranges[i];
      repl.emplace_back(r, i == 0 ? rest : rest % r.src(0));
      if (i > 0) rest = rest.idiv(r.src(0));
    }
  }
  if (threads > kMaxLocalThreads)
    fail("codegen: a workgroup of {} threads (at most {})", threads, kMaxLocalThreads);
  if (out.global_size.empty()) {
    out.global_size = {idx(1)};
    out.local_size = {idx(1)};
  }
  return repl.empty() ? ast : ast.substitute(repl);
}

}  // namespace ugrad

namespace ugrad {

std::vector<UOp> gpu_guard_program(const UOp& guard, std::vector<UOp> program) {
  if (!guard) return program;
  std::vector<UOp> out = guard.toposort();
  std::unordered_set<UOp> in_prefix(out.begin(), out.end());
  out.push_back(UOp::make(Op::IF, dtypes::void_, {guard}));
  for (UOp& u : program)
    if (!in_prefix.count(u)) out.push_back(std::move(u));
  out.push_back(UOp::make(Op::ENDIF, dtypes::void_, {out.back()}));
  return out;
}

}  // namespace ugrad
