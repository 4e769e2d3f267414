// What an LLVM compile is for: the host CPU or one AMD GPU architecture, its features and opt
// level. Plain data, no LLVM headers: every layer above the back ends can name a target cheaply.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace ugrad {

enum class TargetKind { CPU, AMDGPU };

struct LlvmTarget {
  TargetKind kind = TargetKind::CPU;
  std::string triple;           // x86_64-pc-linux-gnu, amdgcn-amd-amdhsa
  std::string arch;             // LLVM CPU name: znver4, gfx1100, ...
  std::string features;         // "+avx2,+avx512f,..." or "+wavefrontsize32"
  int opt_level = 2;            // 0..3
  int code_object_version = 5;  // AMDGPU only: 4 or 5

  /// "cpu:znver4 O2" / "amdgpu:gfx1100 cov5 O2": for messages.
  std::string describe() const;
  /// Everything that changes the emitted code (triple, arch, sorted features, opt level, code
  /// object version) in one string: part of any compiled-program cache key.
  std::string cache_key() const;
};

/// The host CPU (name and features detected by LLVM). opt_level 0..3.
LlvmTarget cpu_target(int opt_level = 2);

/// An AMD GPU target. Unknown arch -> Error listing the known ones. code_object_version 0 reads the
/// AMD_COV knob (default 5); 4 and 5 are accepted.
LlvmTarget amdgpu_target(std::string_view arch, int opt_level = 2, int code_object_version = 0);

/// The AMD architectures the compiler accepts (RDNA3, RDNA4; all wave32).
std::span<const std::string_view> known_amd_archs();

/// Strips target-feature suffixes a runtime reports ("gfx1100:sramecc-:xnack-" -> "gfx1100").
std::string_view amd_arch_base_name(std::string_view gcn_arch_name);

}  // namespace ugrad
