// Machine code listings for DEBUG=7. x86: llvm_compile(target, ir, LlvmOutput::Assembly) already
// gives the assembly LLVM emitted. AMDGPU: the final linked code object's .text disassembled with
// LLVM's MC disassembler, with a label at each kernel's entry.
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace ugrad {

/// ISA listing of a linked AMD code object ("<kernel>:" labels, "  v_add_f32 ...  // 0x..").
std::string disassemble_amdgpu(std::span<const uint8_t> code_object);

}  // namespace ugrad
