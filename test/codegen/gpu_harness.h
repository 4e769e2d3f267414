// Test helpers for the GPU code generator: compile a kernel AST for gfx1100 down to a linked code
// object and check what a launch relies on (kernarg layout = buffers then variables, wave32,
// flat work-group size = the kernel's local size).
#pragma once
#include <string>

#include "codegen/codegen.h"
#include "runtime/amd/amd_compile.h"

namespace ugrad::test {

struct GpuKernel {
  KernelSource ks;
  AmdBinary bin;
  /// The ISA listing (LLVM's disassembler).
  std::string isa() const;
  /// Launch sizes with variables bound ({} when the kernel has none), x first.
  std::vector<int64_t> global(const std::vector<int64_t>& vars = {}) const;
  std::vector<int64_t> local() const;
};

/// codegen for gfx1100 + amd_compile + metadata checks (doctest CHECKs).
GpuKernel gpu_compile(const UOp& ast, const CodegenOptions& opts = {});

}  // namespace ugrad::test
