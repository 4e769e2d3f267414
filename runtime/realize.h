// realize: the bridge from a lazy tensor graph to computed buffers. It schedules the graph into
// kernels, compiles them through the program cache, allocates buffers and runs the kernels on the
// graph's device. This is what Tensor::realize and friends call; nothing here knows about Tensor.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/allocator.h"
#include "schedule/schedule.h"
#include "uop/shape.h"

namespace ugrad {

/// A new, uninitialised BUFFER node of `count` elements of `dtype` on `device` ("CPU", "NULL",
/// "NULL:gfx1100", "AMD"). Its memory lives as long as the node does.
UOp new_buffer(const std::string& device, DType dtype, int64_t count);
/// A BUFFER node over `bytes` of host memory kept alive by `owner`: on a device that reads host
/// memory (CPU) the buffer IS those bytes (no copy; read-only), elsewhere they are copied in.
UOp host_memory_buffer(const std::string& device, DType dtype, std::span<const std::byte> bytes,
                       std::shared_ptr<const void> owner);
/// The device memory behind a BUFFER node (allocated on first use).
BufferRef buffer_of(const UOp& buffer);

/// Computes every root of the tensor graph and returns, per root, a realized node of the same
/// shape and dtype: RESHAPE(BUFFER, shape), or for a symbolic shape a SHRINK of the buffer
/// reshaped to the maximum shape. ASSIGN roots write into their target's buffer and return it.
/// Variables take their values from the graph (bound variables, schedule/schedule.h); the outputs'
/// shapes keep them bound.
std::vector<UOp> realize(std::span<const UOp> roots);

/// Copies host bytes into a BUFFER node's memory / out of it (sizes are checked).
void copy_in(const UOp& buffer, std::span<const std::byte> data);
void copy_out(const UOp& buffer, std::span<std::byte> data);

/// The BUFFER node under a realized node (RESHAPE/SHRINK chains of a BUFFER), or an empty UOp.
UOp realized_buffer(const UOp& node);

/// A KernelSource estimate (flops, bytes; codegen/cost.h) for one launch: the variables bound to
/// `var_vals` (unbound ones at their maximum).
double launch_estimate(const UOp& estimate, const VarVals& var_vals);

}  // namespace ugrad
