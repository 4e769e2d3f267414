// Hand-written kernels in the tensor graph. A launch is KERNEL(buffers in slot order..., bound
// variables...) whose arg is the id of its AST (a SINK built by codegen/kernel_builder.h); each
// buffer the kernel writes is read back as AFTER(that buffer's view, KERNEL). The AST stays out of
// the graph (graph walks never meet kernel-internal nodes): it is registered here once, under its
// structural hash, which is stable across processes, so caches keyed on the graph's structure
// serve it like any kernel.
#pragma once
#include <cstdint>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

/// Registers a kernel AST and returns its id (its structural hash); the same AST, the same id.
int64_t register_kernel_ast(const UOp& ast);
/// The AST registered under `id` (an InternalError when none is).
UOp kernel_ast(int64_t id);
/// The AST of a KERNEL node.
inline UOp kernel_ast(const UOp& kernel) { return kernel_ast(kernel.arg_as<int64_t>()); }

/// The buffer PARAMs of a kernel AST by slot, and which slots it stores to.
struct KernelSlots {
  std::vector<UOp> params;
  std::vector<bool> written;
};
KernelSlots kernel_slots(const UOp& ast);

/// True for AFTER(view, KERNEL): what a hand-written kernel wrote into the view's buffer.
bool is_kernel_output(const UOp& u);

}  // namespace ugrad
