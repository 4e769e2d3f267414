#include "codegen/render/target_hooks.h"

#include "base/error.h"
#include "codegen/render/llvm_types.h"

namespace ugrad {

std::string TargetHooks::special(RenderContext& r, const UOp& u) const {
  internal_error("render_llvm: {} has no launch index '{}'", r.target().name,
                 u.arg_as<std::string>());
}

void TargetHooks::barrier(RenderContext& r) const {
  internal_error("render_llvm: {} has no workgroup barrier", r.target().name);
}

std::string TargetHooks::local_array(RenderContext& r, const UOp& u) const {
  // a stack array, cache-line aligned
  std::string v = "%local" + r.fresh().substr(2);
  r.add_alloca(fmt::format("  {} = alloca [{} x {}], align 64", v, u.arg_as<int64_t>(),
                           mtype(u.dtype().base())));
  return v;
}

std::string TargetHooks::dot4(RenderContext& r, const UOp& u, int64_t words) const {
  internal_error("render_llvm: DOT4 {} on {} lanes for {}", arg_to_string(u.arg()), words,
                 r.target().name);
}

std::string TargetHooks::byte_lut(RenderContext& r, const UOp&, int64_t words) const {
  internal_error("render_llvm: BYTE_LUT on {} lanes for {}", words, r.target().name);
}

Rendered TargetHooks::instruction(RenderContext& r, const UOp& u) const {
  internal_error("render_llvm: {} has no instruction {} '{}'", r.target().name, op_name(u.op()),
                 u.op() == Op::CUSTOM ? u.arg_as<std::string>() : std::string());
}

const TargetHooks& target_hooks(const CodegenTarget& target) {
  return target.is_gpu ? amdgpu_hooks() : x86_hooks();
}

std::string vector_type(DType t) { return fmt::format("<{} x {}>", t.count, ltype(t.base())); }

}  // namespace ugrad
