#include "llm/kernels/kernel_cache.h"

#include <map>
#include <mutex>

namespace ugrad::llm {

UOp cached_kernel(const std::string& name, const std::function<UOp()>& build) {
  static std::mutex mu;
  static std::map<std::string, UOp> kernels;
  std::lock_guard lock(mu);
  UOp& ast = kernels[name];
  if (!ast) ast = build();
  return ast;
}

}  // namespace ugrad::llm
