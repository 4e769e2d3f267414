// Linking an AMDGPU relocatable object (ET_REL) into an HSA code object (ET_DYN), the form HIP's
// module loader accepts. In-process lld by default (serialized: lld is not thread-safe); the
// ld.lld-19 subprocess is the fallback when lld says it cannot run again, and a test oracle.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ugrad {

enum class AmdLinker { InProcess, Subprocess };

/// Links `relocatable` with `-shared --no-undefined`; `what` names it in errors (with lld's
/// output).
std::vector<uint8_t> amd_link(std::span<const uint8_t> relocatable,
                              std::string_view what = "kernel",
                              AmdLinker linker = AmdLinker::InProcess);

/// Path of the ld.lld used by AmdLinker::Subprocess (LLVM 19's, never the system default 14).
std::string_view amd_ld_lld_path();

}  // namespace ugrad
