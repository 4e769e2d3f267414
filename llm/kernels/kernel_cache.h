// Hand-written kernels are built once per shape: the AST under its name (which says the format
// and shape), for every later call of the same kernel.
#pragma once
#include <functional>
#include <string>

#include "uop/uop.h"

namespace ugrad::llm {

/// The kernel named `name`, built by `build` on the first request (thread-safe).
UOp cached_kernel(const std::string& name, const std::function<UOp()>& build);

}  // namespace ugrad::llm
