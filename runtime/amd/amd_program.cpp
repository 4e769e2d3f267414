#include "runtime/amd/amd_program.h"

#include <fmt/format.h>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/llvm_disasm.h"
#include "runtime/program_cache.h"

namespace ugrad {

namespace {
// Every variable is an i64 kernel parameter (codegen/render/render_llvm.cpp).
constexpr uint32_t kVariableBytes = 8;
}  // namespace

AmdKernelBinary compile_amd_kernel(const KernelSource& src, const LlvmTarget& target) {
  if (target.kind != TargetKind::AMDGPU)
    internal_error("compile_amd_kernel: {} is not an AMDGPU target", target.describe());
  AmdKernelBinary bin;
  bin.code_object = ProgramCache::instance().get_or_compile(
      src.src, target.cache_key(), "hsaco",
      [&] { return amd_compile(target, src.src, src.name).code_object; });
  // A cached entry is parsed and checked like a fresh one: the cache holds bytes, not trust.
  bin.info = parse_amd_code_object(bin.code_object, src.name);
  if (bin.info.arch != target.arch || bin.info.code_object_version != target.code_object_version)
    fail("amdgpu: kernel {}: code object is {} v{}, the target is {} v{}", src.name, bin.info.arch,
         bin.info.code_object_version, target.arch, target.code_object_version);
  const AmdKernelInfo& kernel = bin.info.kernel(src.entry);
  bin.kernel_index = static_cast<size_t>(&kernel - bin.info.kernels.data());
  std::vector<uint32_t> var_sizes(src.vars.size(), kVariableBytes);
  validate_amd_kernel(kernel, src.buffers.size(), src.vars.size(), var_sizes);
  if (debug_level() >= 7)
    fmt::print("{} ({}):\n{}\n", src.name, target.arch, disassemble_amdgpu(bin.code_object));
  return bin;
}

std::vector<uint8_t> pack_kernel_args(const AmdKernelBinary& bin, std::span<void* const> buffers,
                                      std::span<const int64_t> vars) {
  std::vector<uint64_t> addresses(buffers.size()), scalars(vars.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    addresses[i] = reinterpret_cast<uintptr_t>(buffers[i]);
  for (size_t i = 0; i < vars.size(); ++i) scalars[i] = static_cast<uint64_t>(vars[i]);
  return pack_kernargs(bin.kernel(), addresses, scalars);
}

}  // namespace ugrad
