// LLVM IR text -> optimized object bytes or assembly text, for any LlvmTarget. This is the one
// place that runs LLVM's new pass manager; everything else hands it IR text and gets bytes back.
// Thread-safe: each call owns its LLVMContext; each thread keeps its own TargetMachines.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/llvm_target.h"

namespace ugrad {

/// Wall time of each phase of one compile, in milliseconds.
struct LlvmPhaseTimes {
  double parse_ms = 0;     // parse + verify + data layout
  double optimize_ms = 0;  // new-PM O<n> pipeline
  double codegen_ms = 0;   // instruction selection .. object/asm emission
};

/// What llvm_compile emits.
enum class LlvmOutput { Object, Assembly, OptimizedIR };

/// Parses `ir_text` (errors name `what` and the line), verifies it, sets the target's data layout
/// and triple, runs the O<opt_level> pipeline with the target's TTI, and emits `output`. LLVM
/// diagnostics and IR LLVM is known to abort on become Errors.
std::string llvm_compile(const LlvmTarget& target, std::string_view ir_text, LlvmOutput output,
                         std::string_view what = "kernel", LlvmPhaseTimes* times = nullptr);

/// llvm_compile(..., LlvmOutput::Object) as bytes (an ELF relocatable object).
std::vector<uint8_t> llvm_compile_object(const LlvmTarget& target, std::string_view ir_text,
                                         std::string_view what = "kernel",
                                         LlvmPhaseTimes* times = nullptr);

}  // namespace ugrad
