// Cost estimates of a kernel, computed once by codegen and carried in KernelSource (flops, bytes):
// symbolic index expressions over the kernel's variables, evaluated per launch (DEBUG=2 prints
// GFLOP/s and GB/s from them).
#pragma once
#include "uop/uop.h"

namespace ugrad {

/// The work of a kernel AST (after gather_load): its ALU ops (a reduction's accumulate included)
/// times the iterations enclosing them, an index expression over the kernel's variables (a KV
/// cache's symbolic length).
UOp estimate_flops(const UOp& kernel);
/// The memory traffic of a kernel AST (after gather_load): per buffer, the elements its loads reach
/// (each load's index takes one value per iteration of the ranges it depends on) and likewise its
/// stores, each capped at the buffer's size, in bytes. A decode step writing one position of a
/// KV cache counts that position, not the cache.
UOp estimate_bytes(const UOp& kernel);

}  // namespace ugrad
