#include "codegen/opt/gpu_reduce.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "codegen/opt/opt.h"

namespace ugrad {

UOp group_reduce(const UOp& ast, int64_t axis, int64_t lanes) {
  const std::vector<UOp> ranges = kernel_ranges(ast);
  auto it = std::find_if(ranges.begin(), ranges.end(),
                         [&](const UOp& r) { return r.arg_as<RangeArg>().axis == axis; });
  if (it == ranges.end()) fail("codegen: GROUP_REDUCE({},{}): no axis {}", axis, lanes, axis);
  const UOp r = *it;
  if (r.arg_as<RangeArg>().type != AxisType::Reduce)
    fail("codegen: GROUP_REDUCE({},{}): axis {} is a {} axis", axis, lanes, axis,
         axis_type_name(r.arg_as<RangeArg>().type));
  if (lanes < 2 || !r.src(0).is_const() || r.src(0).const_int() % lanes != 0)
    fail("codegen: GROUP_REDUCE({},{}): {} threads do not divide the extent {}", axis, lanes, lanes,
         r.src(0).render());
  int64_t fresh = ranges.back().arg_as<RangeArg>().axis + 1;
  const UOp outer = UOp::range(r.src(0).const_int() / lanes, axis, AxisType::Reduce);
  const UOp lane = UOp::range(lanes, fresh++, AxisType::GroupReduce);
  const UOp zero = UOp::cnst_int(dtypes::index, 0);

  std::unordered_map<UOp, UOp> repl;
  repl.emplace(r, outer * lanes + lane);
  int64_t n_lds = 0;
  for (const UOp& u : ast.toposort()) {
    if (u == r || u.op() == Op::SINK) continue;
    const bool split =
        u.op() == Op::REDUCE && std::find(u.src().begin() + 1, u.src().end(), r) != u.src().end();
    std::vector<UOp> src;
    for (size_t i = 0; i < u.src().size(); ++i) {
      const UOp& s = u.src(i);
      if (split && i > 0 && s == r) continue;
      auto found = repl.find(s);
      src.push_back(found == repl.end() ? s : found->second);
    }
    if (!split) {
      UOp n = u.replace_src(std::move(src));
      if (!(n == u)) repl.emplace(u, n);
      continue;
    }
    const Op op = u.arg_as<Op>();
    const DType dt = u.dtype();
    src.push_back(outer);
    UOp partial = UOp::make(Op::REDUCE, dt, std::move(src), op);
    // One LDS array per reduce; sizes differ so the interned DEFINE_LOCALs stay distinct.
    const DType lds_t = dt.ptr(AddrSpace::Local);
    UOp lds = UOp::make(Op::DEFINE_LOCAL, lds_t, {}, lanes * ++n_lds);
    UOp st =
        UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, lds_t, {lds, lane}), partial});
    UOp bar = UOp::make(Op::BARRIER, dtypes::void_, {st});
    UOp shared = UOp::make(Op::AFTER, lds_t, {lds, bar});
    UOp j = UOp::range(lanes, fresh++, AxisType::Reduce);
    UOp part = UOp::make(Op::LOAD, dt, {UOp::make(Op::INDEX, lds_t, {shared, j})});
    // A second barrier after the reads: inside an enclosing loop, the next iteration's writes to
    // the array must wait for every lane to have combined this one's partials.
    UOp total = UOp::make(Op::REDUCE, dt, {part, j}, op);
    UOp done = UOp::make(Op::BARRIER, dtypes::void_, {total});
    repl.emplace(u, UOp::make(Op::AFTER, dt, {total, done}));
  }
  // Every lane holds the same results: lane 0 stores them.
  std::vector<UOp> stores;
  for (const UOp& s : ast.src()) {
    auto found = repl.find(s);
    const UOp& n = found == repl.end() ? s : found->second;
    stores.push_back(UOp::make(Op::STORE, dtypes::void_, {n.src(0), n.src(1), lane.eq(zero)}));
  }
  return ast.replace_src(std::move(stores));
}

}  // namespace ugrad
