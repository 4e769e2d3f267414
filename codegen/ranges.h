// Which loop ranges a node depends on: the RANGEs it reaches, less those a REDUCE or an END on the
// way closes. Codegen uses it to find output loops, to place accumulators and to hoist invariant
// code out of loops.
#pragma once
#include <unordered_map>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

/// Open ranges of every node under `root` (each list sorted by axis id).
using RangeMap = std::unordered_map<UOp, std::vector<UOp>>;
RangeMap open_ranges(const UOp& root);

/// Loop nesting order: threaded axes outermost, then by axis id.
bool loop_order(const UOp& a, const UOp& b);

/// `r` (a range, or any node) is in `u`'s graph.
bool depends_on(const UOp& u, const UOp& r);

}  // namespace ugrad
