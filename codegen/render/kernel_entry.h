// The LLVM module around a rendered kernel body: its declarations and globals, and the entry the
// target's calling convention needs. CPU: `void name(void** args, i64 core_id, i64 n_cores)`
// unpacking args[] into an always-inlined body with noalias buffer pointers. GPU: an
// amdgpu_kernel taking the buffers and variables, with `local_threads` as its flat work-group
// size. Buffers are named %data<slot> and variables %var<j> in the body.
#pragma once
#include <set>
#include <string>

#include "codegen/render/render_llvm.h"

namespace ugrad {

/// What the renderer printed for one kernel.
struct RenderedBody {
  std::set<std::string> declares;  // intrinsic declarations
  std::string globals;             // module-level definitions (workgroup-shared arrays)
  std::string allocas, body;       // the function's entry allocas, then its blocks
};

/// The LLVM type of a buffer pointer on `target` ("ptr", "ptr addrspace(1)").
std::string buffer_ptr_type(const CodegenTarget& target);

/// The complete module of `body` as function `name`.
std::string kernel_module(const RenderedBody& body, const KernelSignature& sig,
                          const CodegenTarget& target, const std::string& name,
                          int64_t local_threads);

}  // namespace ugrad
