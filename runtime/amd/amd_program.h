// One kernel compiled for one AMD architecture, shared by the AMD device and the NULL:<arch>
// compile-only device: IR -> code object through the program cache, metadata parsed and checked
// against the kernel's parameters (buffers, then 8-byte variables) before anything is launched.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/amd/amd_code_object.h"
#include "runtime/llvm_target.h"

namespace ugrad {

/// A linked, validated code object holding the kernel `src.entry`.
struct AmdKernelBinary {
  std::vector<uint8_t> code_object;  // ready for hipModuleLoadData
  AmdCodeObject info;
  size_t kernel_index = 0;  // into info.kernels
  const AmdKernelInfo& kernel() const { return info.kernels.at(kernel_index); }
};

/// Compiles `src` for `target` (kind AMDGPU) through the program cache (keyed by IR, target cache
/// key and "hsaco"), parses the code object, checks its architecture and code object version and
/// validates the kernel against `src` (validate_amd_kernel). DEBUG=7 prints its ISA.
AmdKernelBinary compile_amd_kernel(const KernelSource& src, const LlvmTarget& target);

/// The kernarg segment of one launch: buffer device addresses by slot, then variable values.
std::vector<uint8_t> pack_kernel_args(const AmdKernelBinary& bin, std::span<void* const> buffers,
                                      std::span<const int64_t> vars);

}  // namespace ugrad
