// Reading an AMD HSA code object (ELF64, ET_DYN) with LLVM's ELF and MessagePack readers: header,
// sections, symbols, the NT_AMDGPU_METADATA note and each kernel's 64-byte descriptor at
// `<name>.kd`. Every offset and size read from the file is bounds-checked. validate_amd_kernel()
// checks a kernel against what its caller will pass before anything is launched.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ugrad {

enum class AmdArgKind {
  GlobalBuffer,
  ByValue,
  HiddenGlobalOffsetX,
  HiddenGlobalOffsetY,
  HiddenGlobalOffsetZ,
  HiddenBlockCountX,
  HiddenBlockCountY,
  HiddenBlockCountZ,
  HiddenGroupSizeX,
  HiddenGroupSizeY,
  HiddenGroupSizeZ,
  HiddenRemainderX,
  HiddenRemainderY,
  HiddenRemainderZ,
  HiddenOther,  // every other hidden_* (heap, queue, printf, multigrid, dynamic LDS, ...)
  Other,        // non-hidden kinds ugrad never emits (images, pipes, ...)
};

/// The metadata spelling, e.g. "global_buffer", "hidden_block_count_x".
std::string_view amd_arg_kind_name(AmdArgKind kind);
/// True for every hidden_* kind.
bool amd_arg_is_hidden(AmdArgKind kind);

struct AmdKernelArg {
  std::string name;     // may be empty
  uint32_t offset = 0;  // within the kernarg segment
  uint32_t size = 0;
  AmdArgKind kind = AmdArgKind::Other;
  std::string value_kind;     // as written in the metadata
  std::string address_space;  // "global" for buffers, else empty
  std::string access;         // "read_only", "write_only", "read_write" or empty
};

/// The 64-byte amdhsa kernel descriptor (llvm/Support/AMDHSAKernelDescriptor.h layout).
struct AmdKernelDescriptor {
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t kernarg_size = 0;
  int64_t kernel_code_entry_byte_offset = 0;
  uint32_t compute_pgm_rsrc3 = 0;
  uint32_t compute_pgm_rsrc1 = 0;
  uint32_t compute_pgm_rsrc2 = 0;
  uint16_t kernel_code_properties = 0;
  bool wavefront_size32() const { return kernel_code_properties & (1u << 10); }
  bool uses_dynamic_stack() const { return kernel_code_properties & (1u << 11); }
  bool kernarg_segment_ptr() const { return kernel_code_properties & (1u << 3); }
};

struct AmdKernelInfo {
  std::string name;
  std::string symbol;  // "<name>.kd"
  uint32_t kernarg_size = 0;
  uint32_t kernarg_align = 0;
  std::vector<AmdKernelArg> args;     // as listed in the metadata (explicit first, then hidden)
  uint32_t group_segment_size = 0;    // static LDS bytes
  uint32_t private_segment_size = 0;  // scratch bytes per work-item
  uint32_t sgpr_count = 0;
  uint32_t vgpr_count = 0;
  uint32_t sgpr_spill_count = 0;
  uint32_t vgpr_spill_count = 0;
  uint32_t wavefront_size = 0;
  uint32_t max_flat_workgroup_size = 0;
  AmdKernelDescriptor descriptor;
  uint64_t descriptor_address = 0;  // virtual address of <name>.kd

  /// The explicit (non-hidden) arguments, in order.
  std::vector<const AmdKernelArg*> explicit_args() const;
};

struct AmdCodeObject {
  uint8_t abi_version = 0;      // EI_ABIVERSION: 2 = COV4, 3 = COV5
  int code_object_version = 0;  // 4 or 5
  uint32_t elf_flags = 0;
  std::string arch;                      // from EF_AMDGPU_MACH, e.g. "gfx1100"
  std::string target;                    // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx1100"
  std::vector<uint64_t> amdhsa_version;  // [1, 1] COV4, [1, 2] COV5
  std::vector<AmdKernelInfo> kernels;
  uint64_t text_address = 0;
  uint64_t text_offset = 0;  // file offset of .text
  uint64_t text_size = 0;

  /// The kernel named `name`; Error listing the kernels if absent.
  const AmdKernelInfo& kernel(std::string_view name) const;
};

/// Parses and checks the structure of a linked code object; `what` names it in errors.
AmdCodeObject parse_amd_code_object(std::span<const uint8_t> elf,
                                    std::string_view what = "code object");

/// Checks a kernel before use: wave32, descriptor agrees with metadata, kernarg layout sorted,
/// aligned, non-overlapping and inside kernarg_size, LDS within 64 KiB, and exactly `num_buffers`
/// global buffers (8 bytes) followed by `num_scalars` by-value args, of `scalar_sizes` bytes when
/// given. Error names the kernel and the argument.
void validate_amd_kernel(const AmdKernelInfo& kernel, size_t num_buffers, size_t num_scalars,
                         std::span<const uint32_t> scalar_sizes = {});

/// Architecture name of an EF_AMDGPU_MACH value ("gfx1100"), or "" if not one ugrad knows.
std::string_view amd_arch_of_elf_mach(uint32_t mach);

}  // namespace ugrad
