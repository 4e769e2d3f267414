#include "gpu_harness.h"

#include <doctest/doctest.h>

#include "runtime/llvm_disasm.h"
#include "runtime/llvm_target.h"
#include "uop/symbolic.h"

namespace ugrad::test {

std::string GpuKernel::isa() const { return disassemble_amdgpu(bin.code_object); }

std::vector<int64_t> GpuKernel::global(const std::vector<int64_t>& vars) const {
  std::vector<std::pair<UOp, UOp>> bind;
  for (size_t i = 0; i < vars.size(); ++i)
    bind.emplace_back(ks.vars.at(i), UOp::cnst_int(dtypes::index, vars[i]));
  std::vector<int64_t> out;
  for (const UOp& g : ks.global_size) {
    UOp v = simplify(g.substitute(bind));
    REQUIRE(v.is_const());
    out.push_back(v.const_int());
  }
  return out;
}

std::vector<int64_t> GpuKernel::local() const {
  std::vector<int64_t> out;
  for (const UOp& l : ks.local_size) out.push_back(l.const_int());
  return out;
}

GpuKernel gpu_compile(const UOp& ast, const CodegenOptions& opts) {
  static const CodegenTarget target = amd_codegen_target("gfx1100");
  static const LlvmTarget llvm = amdgpu_target("gfx1100");
  GpuKernel k;
  k.ks = codegen(ast, target, opts);
  k.bin = amd_compile(llvm, k.ks.src, k.ks.name);
  const AmdKernelInfo& info = k.bin.info.kernel(k.ks.entry);
  std::vector<uint32_t> sizes(k.ks.vars.size(), 8);
  validate_amd_kernel(info, k.ks.buffers.size(), k.ks.vars.size(), sizes);
  int64_t threads = 1;
  for (int64_t l : k.local()) threads *= l;
  CHECK(info.max_flat_workgroup_size == uint32_t(threads));
  CHECK(info.wavefront_size == 32);
  CHECK(k.ks.global_size.size() == k.ks.local_size.size());
  CHECK(k.ks.global_size.size() <= 3);
  return k;
}

}  // namespace ugrad::test
