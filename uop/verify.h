// The UOp verifier: a rule table that checks dtypes, arities and args of every node in a graph.
// A broken rule is a bug in whatever built the graph, reported as an InternalError naming the op,
// the printed node and the rule.
#pragma once
#include <string_view>

#include "uop/pattern_matcher.h"

namespace ugrad {

/// The verifier's rules. Their callbacks never rewrite: they return nullopt or throw.
const PatternMatcher& pm_verify();

/// Checks every node under `root`; throws InternalError at the first broken rule. `stage` (if not
/// empty) names the compiler stage whose output is checked.
void verify(const UOp& root, std::string_view stage = {});

/// verify(root, stage) when the VERIFY knob is 1, and always in debug builds (no NDEBUG).
void verify_if_enabled(const UOp& root, std::string_view stage);

}  // namespace ugrad
