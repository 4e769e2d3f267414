// Symbolic simplification: rule tables over integer (index) and bool UOps, plus the folding of
// constants of every dtype. Each family is its own PatternMatcher; pm_symbolic composes them.
// Rules are sound for C-truncating IDIV/MOD: a rule that needs non-negative operands checks vmin.
//
//   pm_const_fold       ALU ops of constants -> CONST (exec_alu); vmin == vmax -> CONST
//   pm_identities       x+0, x*1, x*0, x//1, x%1, x^x, max(x,x), bool algebra, where folding
//   pm_canonical        constants move right, (x+c0)+c1, (x*c0)*c1, x-y -> x+y*-1, distribution
//   pm_like_terms       sums flattened: like terms collected, (x%c)+(x//c)*c -> x, constant last
//   pm_compare          comparisons by ranges and algebra (c0+x<c1, x*c<d, x//c<d)
//   pm_divmod           div/mod folding (constant quotient, gcd, remainder split, nesting)
//   pm_simplify_valid   an INDEX/WHERE gate tightens the ranges its index is simplified under
//
// The tables are functions returning a static: they are composed across files, and a function-local
// static is built on first use, never before the tables it is made of.
#pragma once
#include "uop/pattern_matcher.h"

namespace ugrad {

/// Constant folding of every elementwise op through exec_alu, and integer nodes whose range is a
/// single value.
const PatternMatcher& pm_const_fold();
/// Algebraic identities that remove a node.
const PatternMatcher& pm_identities();
/// Canonical forms: constants on the right, constants combined, subtraction and negation as *-1.
const PatternMatcher& pm_canonical();
/// Flattened sums: like terms collected, div/mod recombined, the constant term last.
const PatternMatcher& pm_like_terms();
/// Comparisons resolved or rewritten by algebra and ranges.
const PatternMatcher& pm_compare();
/// Integer division and remainder folding.
const PatternMatcher& pm_divmod();
/// All of the above: the symbolic simplifier.
const PatternMatcher& pm_symbolic();
/// pm_symbolic plus re-simplification of gated INDEX and WHERE under their gates.
const PatternMatcher& pm_simplify_valid();

/// graph_rewrite(u, pm_symbolic()).
UOp simplify(const UOp& u);
/// `idx` simplified under the assumption that the bool `valid` holds: bounds in `valid` (an AND of
/// clauses `X<c`, `c<X`, `!(X<c)`) tighten the ranges of X while simplifying. Where `valid` is
/// false the result may differ from `idx`.
UOp simplify_valid(const UOp& idx, const UOp& valid);
/// `valid` with clauses dropped that the ranges already imply (an always-true gate becomes True).
UOp simplify_gate(const UOp& valid);

/// A CONST of `dtype` holding the value (bool, int64 or double payload).
UOp const_from_value(DType dtype, const std::variant<bool, int64_t, double>& v);
/// A CONST's value (its bool, int64 or double payload).
std::variant<bool, int64_t, double> value_of(const UOp& c);

}  // namespace ugrad
