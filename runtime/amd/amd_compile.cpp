#include "runtime/amd/amd_compile.h"

#include <chrono>

#include "base/error.h"

namespace ugrad {

AmdBinary amd_compile(const LlvmTarget& target, std::string_view ir_text, std::string_view what,
                      AmdCompileTimes* times, AmdLinker linker) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  if (target.kind != TargetKind::AMDGPU)
    fail("amdgpu: {}: amd_compile needs an AMDGPU target, got {}", what, target.describe());
  std::vector<uint8_t> object =
      llvm_compile_object(target, ir_text, what, times ? &times->llvm : nullptr);
  auto t0 = Clock::now();
  AmdBinary bin;
  bin.code_object = amd_link(object, what, linker);
  if (times) times->link_ms = ms(t0);
  auto t1 = Clock::now();
  bin.info = parse_amd_code_object(bin.code_object, what);
  if (times) times->parse_ms = ms(t1);
  if (bin.info.arch != target.arch)
    fail("amdgpu: {}: code object is for {}, the target is {}", what, bin.info.arch, target.arch);
  if (bin.info.code_object_version != target.code_object_version)
    fail("amdgpu: {}: code object is v{}, the target asks for v{}", what,
         bin.info.code_object_version, target.code_object_version);
  return bin;
}

}  // namespace ugrad
