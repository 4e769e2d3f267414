// Variables in the tensor graph: bound as AFTER(var, STORE(var, value)), unbound before scheduling.
#include <algorithm>

#include "base/error.h"
#include "schedule/schedule.h"

namespace ugrad {

UOp bind_variable(const UOp& var, int64_t value) {
  if (var.op() != Op::PARAM || var.arg_as<ParamArg>().slot >= 0) fail("bind: not a variable");
  const ParamArg& p = var.arg_as<ParamArg>();
  if (value < p.lo || value > p.hi)
    fail("bind: variable '{}' = {} is outside its range [{}, {}]", p.name, value, p.lo, p.hi);
  UOp store = UOp::make(Op::STORE, dtypes::void_, {var, UOp::cnst_int(dtypes::index, value)});
  return UOp::make(Op::AFTER, var.dtype(), {var, store});
}

std::pair<std::vector<UOp>, std::vector<std::pair<std::string, int64_t>>> unbind_variables(
    const std::vector<UOp>& roots) {
  std::vector<std::pair<UOp, UOp>> subs;
  std::vector<std::pair<std::string, int64_t>> vals;
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  for (const UOp& u : sink.toposort()) {
    if (u.op() != Op::AFTER || u.src(0).op() != Op::PARAM || u.src().size() != 2 ||
        u.src(1).op() != Op::STORE)
      continue;
    const std::string& name = u.src(0).arg_as<ParamArg>().name;
    int64_t v = u.src(1).src(1).const_int();
    auto it = std::find_if(vals.begin(), vals.end(), [&](auto& kv) { return kv.first == name; });
    if (it != vals.end() && it->second != v)
      fail("variable '{}' is bound to both {} and {} in one graph", name, it->second, v);
    if (it == vals.end()) vals.emplace_back(name, v);
    subs.emplace_back(u, u.src(0));
  }
  if (subs.empty()) return {roots, {}};
  return {sink.substitute(subs).src(), vals};
}

}  // namespace ugrad
