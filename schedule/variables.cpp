// Variables in the tensor graph: bound as AFTER(var, STORE(var, value)), unbound before scheduling
// and bound again on realize's outputs.
#include <algorithm>

#include "base/error.h"
#include "schedule/schedule.h"

namespace ugrad {

namespace {

bool is_variable(const UOp& u) { return u.op() == Op::PARAM && u.arg_as<ParamArg>().slot < 0; }

}  // namespace

UOp bind_variable(const UOp& var, int64_t value) {
  if (!is_variable(var)) fail("bind: {} is not a variable", var.render());
  const ParamArg& p = var.arg_as<ParamArg>();
  if (value < p.lo || value > p.hi)
    fail("bind: variable '{}' = {} is outside its range [{}, {}]", p.name, value, p.lo, p.hi);
  UOp store = UOp::make(Op::STORE, dtypes::void_, {var, UOp::cnst_int(dtypes::index, value)});
  return UOp::make(Op::AFTER, var.dtype(), {var, store});
}

bool is_bound_variable(const UOp& u) {
  return u.op() == Op::AFTER && u.src().size() == 2 && is_variable(u.src(0)) &&
         u.src(1).op() == Op::STORE;
}

std::pair<UOp, int64_t> unbind_variable(const UOp& bound) {
  if (!is_bound_variable(bound)) fail("unbind: {} is not a bound variable", bound.render());
  return {bound.src(0), bound.src(1).src(1).const_int()};
}

std::pair<std::vector<UOp>, VarVals> unbind_variables(const std::vector<UOp>& roots) {
  std::vector<std::pair<UOp, UOp>> subs;
  VarVals vals;
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  for (const UOp& u : sink.toposort()) {
    if (!is_bound_variable(u)) continue;
    auto [var, v] = unbind_variable(u);
    const std::string& name = var.arg_as<ParamArg>().name;
    auto it = std::find_if(vals.begin(), vals.end(), [&](auto& kv) { return kv.first == name; });
    if (it != vals.end() && it->second != v)
      fail("variable '{}' is bound to both {} and {} in one graph", name, it->second, v);
    if (it == vals.end()) vals.emplace_back(name, v);
    subs.emplace_back(u, var);
  }
  if (subs.empty()) return {roots, {}};
  return {sink.substitute(subs).src(), vals};
}

UOp rebind_variables(const UOp& node, const VarVals& vals) {
  if (vals.empty()) return node;
  std::vector<std::pair<UOp, UOp>> subs;
  for (const UOp& u : node.toposort()) {
    if (!is_variable(u)) continue;
    const std::string& name = u.arg_as<ParamArg>().name;
    auto it = std::find_if(vals.begin(), vals.end(), [&](auto& kv) { return kv.first == name; });
    if (it != vals.end()) subs.emplace_back(u, bind_variable(u, it->second));
  }
  return subs.empty() ? node : node.substitute(subs);
}

UOp substitute_bound_values(const UOp& node) {
  std::vector<std::pair<UOp, UOp>> subs;
  for (const UOp& u : node.toposort())
    if (is_bound_variable(u))
      subs.emplace_back(u, UOp::cnst_int(u.dtype(), unbind_variable(u).second));
  if (subs.empty()) return node;
  UOp n = node.substitute(subs);
  // Dims that became constant expressions fold to plain constants.
  std::vector<std::pair<UOp, UOp>> folded;
  for (const UOp& u : n.toposort())
    if (u.dtype() == dtypes::index && !u.is_const() && u.vmin() == u.vmax())
      folded.emplace_back(u, UOp::cnst_int(dtypes::index, u.vmin()));
  return folded.empty() ? n : n.substitute(folded);
}

}  // namespace ugrad
