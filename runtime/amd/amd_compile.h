// LLVM IR text -> linked, parsed HSA code object for one AMD GPU target: the whole AMDGPU compile.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/amd/amd_code_object.h"
#include "runtime/amd/amd_link.h"
#include "runtime/llvm_compile.h"

namespace ugrad {

struct AmdCompileTimes {
  LlvmPhaseTimes llvm;
  double link_ms = 0;
  double parse_ms = 0;  // reading our own metadata back
};

struct AmdBinary {
  std::vector<uint8_t> code_object;  // ET_DYN, ready for hipModuleLoadData
  AmdCodeObject info;
};

/// Compiles `ir_text` for `target` (kind AMDGPU), links it and parses the result. Checks that the
/// code object's architecture and code object version are the target's.
AmdBinary amd_compile(const LlvmTarget& target, std::string_view ir_text,
                      std::string_view what = "kernel", AmdCompileTimes* times = nullptr,
                      AmdLinker linker = AmdLinker::InProcess);

}  // namespace ugrad
