#include "runtime/llvm_target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <array>
#include <vector>

#include "base/cpu_level.h"
#include "base/env.h"
#include "base/error.h"

namespace ugrad {

namespace {
constexpr std::array<std::string_view, 5> kAmdArchs = {"gfx1100", "gfx1101", "gfx1102", "gfx1200",
                                                       "gfx1201"};
constexpr std::string_view kAmdTriple = "amdgcn-amd-amdhsa";
}  // namespace

std::span<const std::string_view> known_amd_archs() { return kAmdArchs; }

std::string LlvmTarget::describe() const {
  if (kind == TargetKind::CPU) return fmt::format("cpu:{} O{}", arch, opt_level);
  return fmt::format("amdgpu:{} cov{} O{}", arch, code_object_version, opt_level);
}

std::string LlvmTarget::cache_key() const {
  return fmt::format("{}|{}|{}|O{}|cov{}", triple, arch, features, opt_level,
                     kind == TargetKind::AMDGPU ? code_object_version : 0);
}

static void check_opt_level(int opt_level) {
  if (opt_level < 0 || opt_level > 3) fail("llvm: opt level {} is not in 0..3", opt_level);
}

LlvmTarget cpu_target(int opt_level) {
  check_opt_level(opt_level);
  LlvmTarget t;
  t.kind = TargetKind::CPU;
  t.triple = llvm::Triple::normalize(llvm::sys::getProcessTriple());
  // CPU_LEVEL=avx2: a generic AVX2 CPU, every AVX-512, AMX and VNNI extension of the host off.
  const bool avx2 = cpu_level_avx2();
  t.arch = avx2 ? "x86-64-v3" : llvm::sys::getHostCPUName().str();
  const auto above_avx2 = [](llvm::StringRef f) {
    return f.starts_with("avx512") || f.starts_with("amx") || f.starts_with("avx10") ||
           f.starts_with("avxvnni") || f == "evex512";
  };
  // Sorted: StringMap iteration order is unspecified, and the string is part of cache keys.
  std::vector<std::string> features;
  for (const auto& f : llvm::sys::getHostCPUFeatures()) {
    const bool on = f.second && !(avx2 && above_avx2(f.first()));
    std::string flag(1, on ? '+' : '-');
    flag += f.first().str();
    features.push_back(std::move(flag));
  }
  std::sort(features.begin(), features.end());
  for (const auto& f : features) t.features += (t.features.empty() ? "" : ",") + f;
  t.opt_level = opt_level;
  return t;
}

std::string_view amd_arch_base_name(std::string_view gcn_arch_name) {
  return gcn_arch_name.substr(0, gcn_arch_name.find(':'));
}

LlvmTarget amdgpu_target(std::string_view arch, int opt_level, int code_object_version) {
  check_opt_level(opt_level);
  std::string_view base = amd_arch_base_name(arch);
  bool known = false;
  for (auto k : kAmdArchs) known |= (k == base);
  if (!known) {
    std::string list;
    for (auto k : kAmdArchs) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    fail("amdgpu: unknown architecture '{}' (known: {})", arch, list);
  }
  if (code_object_version == 0) code_object_version = static_cast<int>(knob_int(Knob::AMD_COV));
  if (code_object_version != 4 && code_object_version != 5)
    fail("amdgpu: code object version {} is not supported (AMD_COV must be 4 or 5)",
         code_object_version);
  LlvmTarget t;
  t.kind = TargetKind::AMDGPU;
  t.triple = std::string(kAmdTriple);
  t.arch = std::string(base);
  t.features = "+wavefrontsize32";  // RDNA default; wave64 makes WMMA unselectable (an abort)
  t.opt_level = opt_level;
  t.code_object_version = code_object_version;
  return t;
}

}  // namespace ugrad

// ---- private helpers shared by the LLVM back ends (runtime/llvm_impl.h) ----

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>

#include "runtime/llvm_impl.h"

namespace ugrad::llvm_impl {

void init_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    llvm::InitializeNativeTargetDisassembler();
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
    LLVMInitializeAMDGPUDisassembler();
  });
}

llvm::CodeGenOptLevel codegen_opt_level(int opt_level) {
  switch (opt_level) {
    case 0:
      return llvm::CodeGenOptLevel::None;
    case 1:
      return llvm::CodeGenOptLevel::Less;
    case 3:
      return llvm::CodeGenOptLevel::Aggressive;
    default:
      return llvm::CodeGenOptLevel::Default;
  }
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const LlvmTarget& target) {
  init_targets();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, err);
  if (!t) fail("llvm: no target for triple '{}': {}", target.triple, err);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      target.triple, target.arch, target.features, options, llvm::Reloc::PIC_,
      llvm::CodeModel::Small, codegen_opt_level(target.opt_level)));
  if (!tm) fail("llvm: cannot create a target machine for {}", target.describe());
  return tm;
}

}  // namespace ugrad::llvm_impl
