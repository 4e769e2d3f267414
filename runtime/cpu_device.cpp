#include "runtime/cpu_device.h"

#include <fmt/format.h>

#include "base/env.h"
#include "runtime/cpu_jit.h"
#include "runtime/llvm_compile.h"
#include "runtime/program_cache.h"
#include "runtime/thread_pool.h"

namespace ugrad {
namespace {

// Host memory, with freed buffers cached for reuse (1 GiB at most).
std::shared_ptr<Allocator> host_allocator() {
  static auto alloc =
      std::make_shared<LruAllocator>(std::make_shared<CpuAllocator>(), size_t{1} << 30);
  return alloc;
}

class CpuProgramHandle : public Program {
 public:
  CpuProgramHandle(KernelSource source, std::shared_ptr<CpuProgram> code)
      : Program(std::move(source)),
        code_(std::move(code)),
        fn_(code_->function<ThreadPool::RawKernel>(source_.entry)) {}
  ThreadPool::RawKernel fn() const { return fn_; }

 private:
  std::shared_ptr<CpuProgram> code_;
  ThreadPool::RawKernel fn_;
};

class CpuDevice : public Device {
 public:
  CpuDevice() : target_(cpu_codegen_target()), llvm_(cpu_target(2)) {}
  const std::string& name() const override { return name_; }
  const CodegenTarget& target() const override { return target_; }
  std::shared_ptr<Allocator> allocator() override { return host_allocator(); }
  bool reads_host_memory() const override { return true; }

  std::shared_ptr<Program> compile(KernelSource source) override {
    std::vector<uint8_t> object = compile_cpu_object(source, llvm_);
    std::shared_ptr<CpuProgram> code = CpuJit::instance().load(object, source.name);
    return std::make_shared<CpuProgramHandle>(std::move(source), std::move(code));
  }

  void launch(const Program& program, std::span<void* const> buffers,
              std::span<const int64_t> vars) override {
    const auto& p = static_cast<const CpuProgramHandle&>(program);
    thread_local std::vector<void*> args_;
    args_.assign(buffers.begin(), buffers.end());
    for (int64_t v : vars) args_.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(v)));
    ThreadPool& pool = ThreadPool::instance();
    int64_t cores = std::min<int64_t>(p.source().cpu_threads, pool.num_threads());
    if (cores <= 1)
      p.fn()(args_.data(), 0, 1);
    else
      pool.run(p.fn(), args_.data(), cores);
  }

 private:
  std::string name_ = "CPU";
  CodegenTarget target_;
  LlvmTarget llvm_;
};

}  // namespace

std::vector<uint8_t> compile_cpu_object(const KernelSource& src, const LlvmTarget& target) {
  if (debug_level() >= 7)
    fmt::print("{} ({}):\n{}\n", src.name, target.arch,
               llvm_compile(target, src.src, LlvmOutput::Assembly, src.name));
  return ProgramCache::instance().get_or_compile(src.src, target.describe(), "", [&] {
    return llvm_compile_object(target, src.src, src.name);
  });
}

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

}  // namespace ugrad
