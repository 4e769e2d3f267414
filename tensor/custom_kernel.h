// Hand-written kernels on tensors: a kernel built with codegen/kernel_builder.h runs as exactly one
// kernel of the schedule, over whole buffers, and is cached, captured by the JIT and replayed like
// any generated kernel.
//
//   KernelBuilder kb;                                   // slot 0 written, slot 1 read
//   View out = kb.buffer(dtypes::float32, {n}), in = kb.buffer(dtypes::float32, {n});
//   ... kb.store(out.at(i), ...);
//   Tensor y = custom_kernel(kb.build("twice_4096"), {Tensor::empty({n}), x})[0];
#pragma once
#include <vector>

#include "tensor/tensor.h"

namespace ugrad {

/// Runs the kernel `ast` (KernelBuilder::build(name)) on `buffers`, its buffer parameters in slot
/// order. A slot the kernel only reads takes any tensor (a lazy one, or a view that is not its
/// buffer from element 0, is materialized first); a slot it writes takes a realized buffer view
/// (Tensor::empty for a new output, or an existing buffer updated in place: a KV cache, a
/// recurrent state). Each tensor's dtype is its parameter's, and its buffer holds at least the
/// parameter's element count. `variables` are bound variables (bind_variable); the kernel's own
/// variables take their values from them by name (extra ones are ignored), so one compiled kernel
/// serves every value and a JIT replay passes the new ones. Returns the written slots' tensors in
/// slot order, each read after the kernel ran. Errors name the kernel, the slot and the mismatch.
std::vector<Tensor> custom_kernel(const UOp& ast, const std::vector<Tensor>& buffers,
                                  const std::vector<UOp>& variables = {});

}  // namespace ugrad
