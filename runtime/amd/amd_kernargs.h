// Packing a kernel's argument segment from the code object's metadata (never C struct layout).
//
// Hidden arguments: this packs the whole kernarg_size segment and leaves every hidden_* argument
// zero. HIP fills them itself: hipModuleLaunchKernel with HIP_LAUNCH_PARAM_BUFFER_POINTER copies
// only the explicit arguments out of our buffer (by the kernel signature's offsets), and the
// runtime (ROCclr) writes the hidden block counts, group sizes, remainders, offsets, heap and queue
// pointers for the actual dispatch. Any runtime that does not (a raw HSA dispatch) must fill the
// ones the kernel keeps; the AMDGPU attributor drops the ones the code never reads.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/amd/amd_code_object.h"

namespace ugrad {

/// Packs `buffers` (device addresses) and `scalars` (bit patterns: the low `size` bytes of each are
/// used, the rest must be zero or a sign extension) at the explicit args' metadata offsets into
/// kernarg_size bytes. validate_amd_kernel() runs first; Error names the kernel and argument.
/// A kernel without explicit arguments packs to an empty buffer: HIP rejects a kernarg buffer for
/// a kernel whose signature has no parameters, and fills the hidden ones itself.
std::vector<uint8_t> pack_kernargs(const AmdKernelInfo& kernel, std::span<const uint64_t> buffers,
                                   std::span<const uint64_t> scalars);

}  // namespace ugrad
