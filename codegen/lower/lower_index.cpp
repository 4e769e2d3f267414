#include "codegen/lower/lower_index.h"

#include <cstdint>
#include <limits>
#include <unordered_map>

namespace ugrad {

namespace {

constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();

bool fits_int32(const UOp& u) { return u.vmin() >= kMin32 && u.vmax() <= kMax32; }

// `e` rebuilt over int32, or an empty UOp when some value does not fit or an op is unexpected.
UOp narrow(const UOp& e) {
  std::unordered_map<UOp, UOp> out;
  for (const UOp& u : e.toposort()) {
    if (u.dtype() != dtypes::index) continue;  // bool gates inside WHERE stay as they are
    if (!fits_int32(u)) return {};
    UOp n;
    if (u.op() == Op::CONST) {
      n = UOp::cnst_int(dtypes::int32, u.const_int());
    } else if (u.op() == Op::RANGE || u.op() == Op::PARAM || u.op() == Op::SPECIAL) {
      n = UOp::make(Op::CAST, dtypes::int32, {u});
    } else if (is_alu(u.op()) && u.op() != Op::CAST && u.op() != Op::BITCAST) {
      std::vector<UOp> src;
      for (const UOp& s : u.src()) {
        auto it = out.find(s);
        src.push_back(it == out.end() ? s : it->second);
      }
      n = UOp::make(u.op(), dtypes::int32, std::move(src), u.arg());
    } else {
      return {};
    }
    out.emplace(u, n);
  }
  return out.at(e);
}

}  // namespace

const PatternMatcher& pm_lower_index() {
  static const PatternMatcher pm({
      {UPat(Op::INDEX).named("x"),
       [](const Match& m) -> std::optional<UOp> {
         const UOp& x = m["x"];
         if (x.src().size() < 2 || x.src(1).dtype() != dtypes::index) return std::nullopt;
         UOp n = narrow(x.src(1));
         if (!n) return std::nullopt;
         std::vector<UOp> src = x.src();
         src[1] = n;
         return x.replace_src(std::move(src));
       }},
  });
  return pm;
}

}  // namespace ugrad
