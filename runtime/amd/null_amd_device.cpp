#include "runtime/amd/null_amd_device.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/quote.h"
#include "runtime/amd/amd_program.h"
#include "runtime/launch_dims.h"

namespace ugrad {
namespace {

// Hands out distinct, never-dereferenced addresses so packed kernargs look like a real launch's.
class NullAmdAllocator : public Allocator {
 public:
  void* alloc(size_t bytes) override {
    std::lock_guard lock(mutex_);
    uintptr_t at = next_;
    next_ += (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    return reinterpret_cast<void*>(at);
  }
  void free(void*, size_t) override {}
  void copy_in(void*, const void*, size_t) override {}
  void copy_out(void* dst, const void*, size_t bytes) override { std::memset(dst, 0, bytes); }

 private:
  static constexpr size_t kAlign = 256;
  std::mutex mutex_;
  uintptr_t next_ = uintptr_t{1} << 40;  // a plausible GPU virtual address range
};

class NullAmdProgram : public Program {
 public:
  NullAmdProgram(KernelSource src, AmdKernelBinary bin)
      : Program(std::move(src)), binary_(std::move(bin)) {}
  const AmdKernelBinary& binary() const { return binary_; }

 private:
  AmdKernelBinary binary_;
};

class NullAmdDevice : public Device {
 public:
  explicit NullAmdDevice(const std::string& arch)
      : name_("NULL:" + arch), target_(amd_codegen_target(arch)), llvm_(amdgpu_target(arch)) {}
  const std::string& name() const override { return name_; }
  const CodegenTarget& target() const override { return target_; }
  std::shared_ptr<Allocator> allocator() override { return allocator_; }

  std::shared_ptr<Program> compile(KernelSource source) override {
    AmdKernelBinary bin = compile_amd_kernel(source, llvm_);
    return std::make_shared<NullAmdProgram>(std::move(source), std::move(bin));
  }

  // Everything a launch checks (dims against the kernel's workgroup limit, values against the
  // argument sizes), then nothing runs.
  void launch(const Program& program, std::span<void* const> buffers,
              std::span<const int64_t> vars) override {
    const auto& p = static_cast<const NullAmdProgram&>(program);
    eval_launch_dims(p.source(), vars, p.binary().kernel().max_flat_workgroup_size);
    pack_kernel_args(p.binary(), buffers, vars);
  }
  bool runs_kernels() const override { return false; }

 private:
  std::string name_;
  CodegenTarget target_;
  LlvmTarget llvm_;
  std::shared_ptr<Allocator> allocator_ = std::make_shared<NullAmdAllocator>();
};

}  // namespace

std::unique_ptr<Device> make_null_amd_device(const std::string& arch) {
  auto known = known_amd_archs();
  if (std::find(known.begin(), known.end(), arch) == known.end()) {
    std::string names;
    for (std::string_view k : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", k);
    fail("unknown device 'NULL:{}': AMD architecture {} is not supported (known: {})", arch,
         quote(arch), names);
  }
  return std::make_unique<NullAmdDevice>(arch);
}

}  // namespace ugrad
