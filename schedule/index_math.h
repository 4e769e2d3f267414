// Index arithmetic for the scheduler: small constructors that fold constants and identities as
// they build, so kernel ASTs stay readable before the symbolic rules run.
#pragma once
#include <vector>

#include "uop/shape.h"

namespace ugrad::index_math {

UOp add(const UOp& a, const UOp& b);
UOp sub(const UOp& a, const UOp& b);
UOp mul(const UOp& a, const UOp& b);
UOp div(const UOp& a, const UOp& b);
UOp mod(const UOp& a, const UOp& b);
/// Logical and of two gates; an empty UOp means "always valid".
UOp both(const UOp& a, const UOp& b);
/// Row-major strides of `dims` (symbolic dims give symbolic strides).
std::vector<UOp> strides(const Shape& dims);
/// Σ idx[i] * strides(dims)[i].
UOp flatten(const std::vector<UOp>& idx, const Shape& dims);
/// The per-axis indices of flat index `flat` in `dims`.
std::vector<UOp> unflatten(const UOp& flat, const Shape& dims);

}  // namespace ugrad::index_math
