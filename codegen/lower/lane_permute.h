// Lookups by a 4-bit value as one lane permute (x86 AVX-512 vpermps). In a kernel with vector
// lanes (see expand.h), a float expression f(q) whose only lane-varying input is an integer q in
// [0, 16) — a 4-bit quant's level d*q + m, a 16-entry table's select tree — is evaluated for the
// sixteen values of q at once, on the lane index, and each lane picks its own:
//   f(q) -> CUSTOM lane_permute(f(CAST(lane)), q')    result[l] = table[q[l] & 15]
// where q' is q without a final `& 15` (the permute reads only the index's low four bits); bit
// tests x & c (c < 16) of a wider x count as functions of q = x & 15 (a codebook's tree). With
// lanes ≥ 16 and `target.has_lane_permute` only; the table's lanes past 15 are never read. In a
// table, lane * (a * b) is regrouped as (lane * a) * b when a is shared with other tables (a Q4_K
// super-block's d): values may differ from f(q) in the last bit (float products reassociated).
#pragma once
#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// The CUSTOM op's name.
inline constexpr const char* kLanePermute = "lane_permute";

/// `expanded` (an AST after expand_ranges) with every eligible f(q) rewritten as above.
/// A whole-graph pass: only the outermost lookup of an index is rewritten (it needs each node's
/// users), and factors shared by several tables are counted over all of them.
UOp lane_permutes(const UOp& expanded, const CodegenTarget& target);

}  // namespace ugrad
