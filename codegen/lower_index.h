// Index dtype lowering: the index expression of an INDEX is computed in int32 when every
// intermediate value fits (by vmin/vmax); otherwise it stays int64. Narrow indices halve the
// width of vector index math and gathers.
//   INDEX(buf, e:index) -> INDEX(buf, e') with e' the same expression over int32:
//   RANGE r -> CAST(r, int32), variable v -> CAST(v, int32), CONST c -> int32 c
#pragma once
#include "uop/pattern_matcher.h"

namespace ugrad {

/// The rule; rewrites each INDEX once.
const PatternMatcher& pm_lower_index();

}  // namespace ugrad
