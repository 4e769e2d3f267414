#include "runtime/null_device.h"

#include <cstring>

#include "runtime/cpu_device.h"

namespace ugrad {
namespace {

class NullAllocator : public Allocator {
 public:
  void* alloc(size_t) override { return this; }
  void free(void*, size_t) override {}
  void copy_in(void*, const void*, size_t) override {}
  void copy_out(void* dst, const void*, size_t bytes) override { std::memset(dst, 0, bytes); }
};

class NullProgram : public Program {
 public:
  explicit NullProgram(KernelSource s) : Program(std::move(s)) {}
};

class NullDevice : public Device {
 public:
  NullDevice() : target_(cpu_codegen_target()), llvm_(cpu_target(2)) {}
  const std::string& name() const override { return name_; }
  const CodegenTarget& target() const override { return target_; }
  std::shared_ptr<Allocator> allocator() override {
    static auto alloc = std::make_shared<NullAllocator>();
    return alloc;
  }
  std::shared_ptr<Program> compile(KernelSource source) override {
    compile_cpu_object(source, llvm_);
    return std::make_shared<NullProgram>(std::move(source));
  }
  void launch(const Program&, std::span<void* const>, std::span<const int64_t>) override {}
  bool runs_kernels() const override { return false; }

 private:
  std::string name_ = "NULL";
  CodegenTarget target_;
  LlvmTarget llvm_;
};

}  // namespace

std::unique_ptr<Device> make_null_device() { return std::make_unique<NullDevice>(); }

}  // namespace ugrad
