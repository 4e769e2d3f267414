#include "codegen/gemm_tiling.h"

namespace ugrad {

std::optional<std::vector<Opt>> gemm_tiling_opts(const UOp&, const CodegenTarget&) {
  return std::nullopt;
}

}  // namespace ugrad
