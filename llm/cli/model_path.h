// Where a --model argument points: a file path, or an alias for a published GGUF file looked up
// in the local model directory.
#pragma once
#include <string>

namespace ugrad::llm {

/// The GGUF path for a path or alias; an Error says where to put a missing aliased file.
std::string resolve_model_path(const std::string& model);

}  // namespace ugrad::llm
