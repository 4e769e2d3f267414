#include "codegen/ranges.h"

#include <algorithm>

namespace ugrad {

bool loop_order(const UOp& a, const UOp& b) {
  const RangeArg &x = a.arg_as<RangeArg>(), &y = b.arg_as<RangeArg>();
  const bool tx = x.type == AxisType::Thread, ty = y.type == AxisType::Thread;
  if (tx != ty) return tx;
  return x.axis < y.axis;
}

bool depends_on(const UOp& u, const UOp& r) {
  for (const UOp& x : u.toposort())
    if (x == r) return true;
  return false;
}

RangeMap open_ranges(const UOp& root) {
  RangeMap m;
  for (const UOp& u : root.toposort()) {
    std::vector<UOp> rs;
    if (u.op() == Op::RANGE) rs.push_back(u);
    const size_t n_value = u.op() == Op::REDUCE || u.op() == Op::END ? 1 : u.src().size();
    for (size_t i = 0; i < u.src().size(); ++i) {
      const UOp& s = u.src(i);
      // The closed ranges of a REDUCE/END themselves contribute only their extents.
      const std::vector<UOp>& srs = m.at(i < n_value ? s : s.src(0));
      rs.insert(rs.end(), srs.begin(), srs.end());
    }
    if (n_value == 1 && u.src().size() > 1)
      std::erase_if(rs, [&](const UOp& r) {
        return std::find(u.src().begin() + 1, u.src().end(), r) != u.src().end();
      });
    std::sort(rs.begin(), rs.end(), loop_order);
    rs.erase(std::unique(rs.begin(), rs.end()), rs.end());
    m.emplace(u, std::move(rs));
  }
  return m;
}

}  // namespace ugrad
