// Index dtype lowering (GPU targets): the index expression of an INDEX is computed in int32 when
// every intermediate value fits (by vmin/vmax); otherwise it stays int64. Narrow indices halve the
// width of vector index math and gathers. CPU kernels keep int64 (nsw) index math: x86-64 folds it
// into addressing modes, where an int32 index costs a sign extension and an add per load (a Q4_K
// matvec's loop: 256 instructions per super-block narrowed, 221 not; Q8_0 33 -> 26).
//   INDEX(buf, e:index) -> INDEX(buf, e') with e' the same expression over int32:
//   RANGE r -> CAST(r, int32), variable v -> CAST(v, int32), CONST c -> int32 c
#pragma once
#include "uop/pattern_matcher.h"

namespace ugrad {

/// The rule; rewrites each INDEX once.
const PatternMatcher& pm_lower_index();

}  // namespace ugrad
