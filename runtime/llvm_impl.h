// Private to the LLVM back ends: shared helpers that need LLVM types. Never include from public
// headers.
#pragma once
#include <llvm/Target/TargetMachine.h>

#include <memory>

#include "runtime/llvm_target.h"

namespace ugrad::llvm_impl {

/// Initializes the native (X86) and AMDGPU targets once, thread-safely.
void init_targets();

/// A TargetMachine for `target` (PIC, small code model).
std::unique_ptr<llvm::TargetMachine> make_target_machine(const LlvmTarget& target);

/// LLVM's CodeGenOptLevel for 0..3.
llvm::CodeGenOptLevel codegen_opt_level(int opt_level);

}  // namespace ugrad::llvm_impl
