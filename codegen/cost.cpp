#include "codegen/cost.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

namespace ugrad {

UOp estimate_flops(const UOp& kernel) {
  // The RANGEs each node depends on, sorted: the union of its sources', in one pass (a walk per
  // node made codegen quadratic in the kernel's size).
  std::unordered_map<const UOpNode*, std::vector<UOp>> ranges_of;
  std::map<std::vector<UOp>, int64_t> ops_by_ranges;  // ALU ops per set of enclosing ranges
  for (const UOp& u : kernel.toposort()) {
    std::vector<UOp> ranges;
    if (u.op() == Op::RANGE) ranges.push_back(u);
    for (const UOp& s : u.src()) {
      const std::vector<UOp>& r = ranges_of.at(s.node());
      ranges.insert(ranges.end(), r.begin(), r.end());
    }
    std::sort(ranges.begin(), ranges.end());
    ranges.erase(std::unique(ranges.begin(), ranges.end()), ranges.end());
    const bool op = (is_alu(u.op()) && u.op() != Op::CAST) || u.op() == Op::REDUCE;
    if (op && u.dtype().scalar != Scalar::Index) ++ops_by_ranges[ranges];
    ranges_of.emplace(u.node(), std::move(ranges));
  }
  UOp flops = UOp::cnst_int(dtypes::index, 0);
  for (const auto& [ranges, ops] : ops_by_ranges) {
    UOp term = UOp::cnst_int(dtypes::index, ops);
    for (const UOp& r : ranges) term = term * r.src(0);
    flops = flops + term;
  }
  return flops;
}

UOp estimate_bytes(const UOp& kernel) {
  // (buffer, is a store) -> elements reached by its accesses
  std::map<std::pair<UOp, bool>, UOp> reached;
  for (const UOp& u : kernel.toposort()) {
    if (u.op() != Op::LOAD && u.op() != Op::STORE) continue;
    const UOp& idx = u.src(0);
    if (idx.op() != Op::INDEX || idx.src(0).op() != Op::PARAM) continue;
    UOp n = UOp::cnst_int(dtypes::index, 1);
    for (const UOp& r : idx.src(1).toposort())
      if (r.op() == Op::RANGE) n = n * r.src(0);
    auto [it, fresh] = reached.try_emplace({idx.src(0), u.op() == Op::STORE}, n);
    if (!fresh) it->second = it->second + n;
  }
  UOp bytes = UOp::cnst_int(dtypes::index, 0);
  for (const auto& [key, n] : reached) {
    const UOp& buf = key.first;
    const UOp size = UOp::cnst_int(dtypes::index, buf.arg_as<ParamArg>().hi);
    bytes = bytes + n.lt(size).where(n, size) * int64_t(itemsize(buf.dtype().base()));
  }
  return bytes;
}

}  // namespace ugrad
