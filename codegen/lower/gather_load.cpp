#include "codegen/lower/gather_load.h"

#include "codegen/ranges.h"

namespace ugrad {

namespace {

// `e` is the range `r` seen through integer casts that keep each of its values.
bool is_range_value(const UOp& e, const UOp& r) {
  UOp x = e;
  while (x.op() == Op::CAST) {
    if (!is_int(x.dtype()) || dtype_max(x.dtype()) < static_cast<double>(r.vmax())) return false;
    x = x.src(0);
  }
  return x == r;
}

void and_clauses(const UOp& c, std::vector<UOp>& out) {
  if (c.op() == Op::AND && is_bool(c.dtype())) {
    and_clauses(c.src(0), out);
    and_clauses(c.src(1), out);
  } else {
    out.push_back(c);
  }
}

// A clause `CAST(r) == idx` of the condition: the REDUCE range r it selects on, the index, and the
// other clauses.
struct Selection {
  UOp range;
  UOp index;
  std::vector<UOp> rest;
};

std::optional<Selection> find_selection(const UOp& red, const UOp& cond) {
  std::vector<UOp> clauses;
  and_clauses(cond, clauses);
  for (size_t i = 0; i < clauses.size(); ++i) {
    const UOp& c = clauses[i];
    if (c.op() != Op::CMPEQ) continue;
    for (size_t k = 1; k < red.src().size(); ++k) {
      const UOp& r = red.src(k);
      for (int side : {0, 1}) {
        const UOp& a = c.src(side);
        const UOp& idx = c.src(1 - side);
        if (!is_range_value(a, r) || !is_int(idx.dtype()) || depends_on(idx, r)) continue;
        Selection s{r, idx, {}};
        for (size_t j = 0; j < clauses.size(); ++j)
          if (j != i) s.rest.push_back(clauses[j]);
        return s;
      }
    }
  }
  return std::nullopt;
}

// The REDUCE `red` of where(cond, val, 0) (then cast to `cast` when set) without the selecting
// range, or nullopt when cond selects on no range of red.
std::optional<UOp> direct_load(const UOp& red, const UOp& cond, const UOp& val,
                               std::optional<DType> cast) {
  std::optional<Selection> sel = find_selection(red, cond);
  if (!sel) return std::nullopt;
  const UOp& r = sel->range;
  const UOp& n = r.src(0);
  if (n.vmin() < 1) return std::nullopt;  // an empty range has no row to clamp into
  UOp idx = sel->index.dtype() == dtypes::index ? sel->index : sel->index.cast(dtypes::index);
  // ok = 0 <= idx < n
  UOp ok = UOp::cnst_int(dtypes::index, -1).lt(idx).alu(Op::AND, idx.lt(n));
  // f is evaluated at min(max(idx, 0), n - 1): its loads stay in bounds without gates, and the
  // index math sees 0 <= at < n (min(a, b) = -max(-a, -b)).
  UOp at = -(-idx.max(0)).max(1 + -1 * n);
  std::vector<std::pair<UOp, UOp>> to_at{{r, at}};
  UOp keep = ok;
  for (const UOp& c : sel->rest) keep = keep.alu(Op::AND, c.substitute(to_at));
  UOp v = keep.where(val.substitute(to_at), val.const_like(0));
  if (cast) v = v.cast(*cast);
  std::vector<UOp> src{v};
  for (size_t k = 1; k < red.src().size(); ++k)
    if (!(red.src(k) == r)) src.push_back(red.src(k));
  if (src.size() == 1) return v;
  return UOp::make(Op::REDUCE, red.dtype(), std::move(src), red.arg());
}

UPat sum_of(const UPat& value) {
  return UPat(Op::REDUCE, {value}).any_len().with_arg(Op::ADD).named("red");
}

}  // namespace

const PatternMatcher& pm_gather_load() {
  static const UPat selected = where(UPat::var("cond", dt_bool), UPat::var("val"), UPat::cnst(0));
  static const PatternMatcher pm({
      // Σ_r where(r == idx, f(r), 0) -> where(0 <= idx < n, f(idx), 0)
      {sum_of(selected),
       [](const Match& m) { return direct_load(m["red"], m["cond"], m["val"], std::nullopt); }},
      // Σ_r cast(where(r == idx, f(r), 0)) -> cast(where(0 <= idx < n, f(idx), 0))
      {sum_of(UPat(Op::CAST, {selected}).named("cast")),
       [](const Match& m) {
         return direct_load(m["red"], m["cond"], m["val"], m["cast"].dtype());
       }},
      // Σ_r f(r) * cast(r == idx) -> where(0 <= idx < n, f(idx), 0)
      {sum_of(UPat::var("val") * UPat(Op::CAST, {UPat::var("cond", dt_bool)})),
       [](const Match& m) { return direct_load(m["red"], m["cond"], m["val"], std::nullopt); }},
  });
  return pm;
}

UOp gather_loads(const UOp& ast) { return graph_rewrite(ast, pm_gather_load()); }

}  // namespace ugrad
