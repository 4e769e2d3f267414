// Gathers as direct loads. tensor/ writes gather, index_select and embedding as a one-hot sum
// (tinygrad style): Σ_r where(r == idx, f(r), 0) over a REDUCE range r. When idx does not depend
// on r, at most one term is non-zero, so the loop over r is replaced by one evaluation at r = idx:
//   REDUCE(WHERE(CAST(r) == idx, f(r), 0), r, ...)    -> REDUCE(WHERE(ok, f(idx), 0), ...)
//   REDUCE(CAST(WHERE(CAST(r) == idx, f(r), 0)), r)   -> CAST(WHERE(ok, f(idx), 0))
//   REDUCE(f(r) * CAST(CAST(r) == idx), r)            -> WHERE(ok, f(idx), 0)
// with ok = 0 <= idx < n (n the extent of r): an out-of-range index selects nothing (0). f is
// evaluated at idx clamped into [0, n), so its loads stay in bounds without gates and its index
// math keeps the bounds r had.
// Other clauses of an AND condition stay, evaluated at r = idx. A REDUCE with no ranges left
// becomes its value.
#pragma once
#include "uop/pattern_matcher.h"

namespace ugrad {

/// The rules (no context). Applied to a kernel AST before optimization.
const PatternMatcher& pm_gather_load();

/// graph_rewrite(ast, pm_gather_load()).
UOp gather_loads(const UOp& ast);

}  // namespace ugrad
