// Affine analysis of index expressions: how an index moves when one range steps by one.
#pragma once
#include <optional>

#include "uop/uop.h"

namespace ugrad {

/// The coefficient c when `e` = c*r + (terms without r), or nullopt when `e` is not affine in `r`
/// (e.g. r under a / or %).
std::optional<int64_t> affine_coefficient(const UOp& e, const UOp& r);

}  // namespace ugrad
