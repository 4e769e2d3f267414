// Helpers shared by the symbolic rule files: integer sums as (term, coefficient) lists, exact
// integer arithmetic with overflow checks, and floor division.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ugrad::sym {

/// Integer dtypes whose values are exactly int64s, so vmin/vmax describe them (not uint64).
bool exact_int(DType t);

/// coeff * base.
struct Term {
  UOp base;
  int64_t coeff;
};

/// An integer expression as sum(coeff_i * base_i) + constant. Bases are never ADD or CONST.
struct Affine {
  std::vector<Term> terms;
  int64_t constant = 0;
};

/// Splits `u` through ADD, NEG and MUL-by-constant into terms (in left-to-right order, repeated
/// bases kept apart). nullopt when a coefficient overflows or `u` has more than `max_terms` terms.
std::optional<Affine> decompose(const UOp& u, size_t max_terms = 128);
/// The sum rebuilt left to right, `constant` last; coefficient-0 terms dropped.
UOp rebuild(const Affine& a, DType dtype);
/// The same sum with repeated bases merged into the first occurrence.
Affine combine_like_terms(const Affine& a);

/// The factors h > 1 of `c` that some coefficient of `a` shares with it (gcds), largest first.
std::vector<int64_t> shared_factors(const Affine& a, int64_t c);
/// The sum as h*y + s with 0 <= s < h over the ranges, so floor(sum/h) = y: y is the terms whose
/// coefficients h divides, over h, plus floor(k/h); s is the other terms (at least one) plus
/// k mod h, or plus k when that fits instead. nullopt when s can leave [0, h).
std::optional<std::pair<UOp, UOp>> split_at_factor(const Affine& a, int64_t h, DType dtype);

/// Floor division and modulo (the remainder has the divisor's sign).
int64_t floordiv(int64_t a, int64_t b);
int64_t floormod(int64_t a, int64_t b);
/// gcd of |a| and |b| (gcd(0, 0) == 0).
int64_t gcd(int64_t a, int64_t b);
/// a*b and a+b, or nullopt on int64 overflow.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
std::optional<int64_t> checked_add(int64_t a, int64_t b);

/// An integer CONST of dtype.
UOp iconst(DType dtype, int64_t v);

}  // namespace ugrad::sym
