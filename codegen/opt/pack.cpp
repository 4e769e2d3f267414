#include "codegen/opt/pack.h"

#include <algorithm>

#include "codegen/opt/opt.h"
#include "codegen/ranges.h"

namespace ugrad {

UOp pack_operand(const UOp& ast, const UOp& axis) {
  const RangeMap open = open_ranges(ast);
  int64_t fresh = kernel_ranges(ast).back().arg_as<RangeArg>().axis + 1;
  for (const UOp& red : ast.toposort()) {
    if (red.op() != Op::REDUCE) continue;
    for (const UOp& ld : red.src(0).toposort()) {
      if (ld.op() != Op::LOAD || ld.src(0).src().size() > 2) continue;
      const std::vector<UOp>& rs = open.at(ld);
      if (std::find(rs.begin(), rs.end(), axis) != rs.end()) continue;
      // Staged ranges: loops nested inside `axis`, the reduce ranges, then upcasts (vector lanes
      // innermost).
      std::vector<UOp> staged;
      for (const UOp& r : rs)
        if (r.arg_as<RangeArg>().type == AxisType::Loop && loop_order(axis, r)) staged.push_back(r);
      const size_t n_inner_loops = staged.size();
      for (const UOp& r : rs)
        if (r.arg_as<RangeArg>().type == AxisType::Reduce) staged.push_back(r);
      if (staged.size() == n_inner_loops) continue;
      for (const UOp& r : rs)
        if (r.arg_as<RangeArg>().type == AxisType::Upcast) staged.push_back(r);
      int64_t size = 1;
      bool fits = true;
      for (const UOp& r : staged) {
        fits &= r.src(0).is_const();
        if (fits) size *= r.src(0).const_int();
      }
      if (!fits || size > kMaxPackElements) continue;
      // P's index over the staged ranges, row-major; the copy loops over fresh Loop ranges.
      UOp idx = UOp::cnst_int(dtypes::index, 0), copy_idx = idx;
      std::vector<std::pair<UOp, UOp>> to_copy;
      std::vector<UOp> copy_loops;
      int64_t stride = size;
      for (const UOp& r : staged) {
        stride /= r.src(0).const_int();
        UOp c = r;
        if (r.arg_as<RangeArg>().type != AxisType::Upcast) {
          c = UOp::range(r.src(0), fresh++, AxisType::Loop);
          to_copy.emplace_back(r, c);
          copy_loops.push_back(c);
        }
        idx = idx + r * stride;
        copy_idx = copy_idx + c * stride;
      }
      const DType pt = ld.dtype().ptr(AddrSpace::Local);
      UOp scratch = UOp::make(Op::DEFINE_LOCAL, pt, {}, size);
      UOp copy = UOp::make(Op::STORE, dtypes::void_,
                           {UOp::make(Op::INDEX, pt, {scratch, copy_idx}), ld.substitute(to_copy)});
      std::vector<UOp> end_src{copy};
      end_src.insert(end_src.end(), copy_loops.begin(), copy_loops.end());
      UOp packed = UOp::make(Op::AFTER, pt, {scratch, UOp::make(Op::END, dtypes::void_, end_src)});
      UOp load = UOp::make(Op::LOAD, ld.dtype(), {UOp::make(Op::INDEX, pt, {packed, idx})});
      return ast.substitute({{ld, load}});
    }
  }
  return ast;
}

}  // namespace ugrad
