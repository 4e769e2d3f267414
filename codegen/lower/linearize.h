// Linearization: the lowered kernel graph (ENDs closing loops, accumulators) becomes one
// block-structured list that the renderer walks once:
//   RANGE r ... END(_, r)    a loop; values inside are computed per iteration
//   IF(cond) ... ENDIF       a guarded region (stores that only core 0 performs)
// Every other node appears once, after its sources, in the outermost loop where all the ranges
// it depends on are open (loop-invariant code is hoisted).
#pragma once
#include <vector>

#include "uop/uop.h"

namespace ugrad {

/// The linear program of `lowered` (the output of lower_reduces). When `threaded`, stores outside
/// every Thread loop are guarded to run on core 0 only. Orders the whole graph (by nature).
std::vector<UOp> linearize(const UOp& lowered, bool threaded);

/// The SPECIAL node that stands for the CPU core id inside a linear program.
UOp core_id_special();

}  // namespace ugrad
