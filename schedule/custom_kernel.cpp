#include "schedule/custom_kernel.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "base/error.h"

namespace ugrad {

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<int64_t, UOp> asts;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

}  // namespace

int64_t register_kernel_ast(const UOp& ast) {
  if (ast.op() != Op::SINK) fail("custom kernel: the AST is a SINK, got {}", op_name(ast.op()));
  const int64_t id = static_cast<int64_t>(ast.hash());
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto [it, added] = r.asts.emplace(id, ast);
  if (!added && !(it->second == ast))
    internal_error("custom kernel: two kernel ASTs share the hash {:016x}", ast.hash());
  return id;
}

UOp kernel_ast(int64_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.asts.find(id);
  if (it == r.asts.end()) internal_error("custom kernel: no AST registered as {:016x}", id);
  return it->second;
}

KernelSlots kernel_slots(const UOp& ast) {
  KernelSlots s;
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::PARAM || u.arg_as<ParamArg>().slot < 0) continue;
    const size_t slot = static_cast<size_t>(u.arg_as<ParamArg>().slot);
    if (s.params.size() <= slot) s.params.resize(slot + 1);
    s.params[slot] = u;
  }
  for (size_t i = 0; i < s.params.size(); ++i)
    if (!s.params[i]) fail("custom kernel: buffer slot {} is never used", i);
  s.written.assign(s.params.size(), false);
  for (const UOp& st : ast.src())
    s.written[static_cast<size_t>(st.src(0).src(0).arg_as<ParamArg>().slot)] = true;
  return s;
}

bool is_kernel_output(const UOp& u) {
  return u.op() == Op::AFTER && u.src().size() == 2 && u.src(1).op() == Op::KERNEL;
}

}  // namespace ugrad
