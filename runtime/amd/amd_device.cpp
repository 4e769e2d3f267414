#include "runtime/amd/amd_device.h"

#include <algorithm>
#include <charconv>
#include <mutex>

#include <fmt/format.h>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_program.h"
#include "runtime/amd/hip_device.h"
#include "runtime/launch_dims.h"

namespace ugrad {
namespace {

// Freed buffers kept for reuse per device (the CPU keeps 1 GiB).
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

// Device memory; copies go through the device's stream so they are ordered after its kernels.
class HipAllocator : public Allocator {
 public:
  HipAllocator(HipDevice& device, HipStream& stream) : device_(device), stream_(stream) {}
  void* alloc(size_t bytes) override {
    try {
      return device_.allocate(std::max<size_t>(bytes, 1));  // 0 bytes still gets its own handle
    } catch (const Error& e) {
      // hip_api's message names the error: out of memory lets the LRU cache free and retry.
      if (std::string_view(e.what()).find("hipErrorOutOfMemory") != std::string_view::npos)
        throw OutOfMemory(e.what());
      throw;
    }
  }
  void free(void* handle, size_t) override {
    stream_.synchronize();  // a queued kernel may still use it
    device_.release(handle);
  }
  void copy_in(void* dst, const void* src, size_t bytes) override {
    device_.copy_to_device_async(dst, src, bytes, stream_);
    stream_.synchronize();  // the host memory is the caller's only until we return
  }
  void copy_out(void* dst, const void* src, size_t bytes) override {
    device_.copy_to_host_async(dst, src, bytes, stream_);
    stream_.synchronize();
  }

 private:
  HipDevice& device_;
  HipStream& stream_;
};

// Everything HIP owns for one device. Never destroyed: HIP tears itself down at exit in an order
// we do not control, and releasing a stream or module after that crashes. Programs live as long
// as the process anyway (realize's program map), so their modules do too.
struct AmdContext {
  std::unique_ptr<HipDevice> hip;
  std::unique_ptr<HipStream> stream;
  std::unique_ptr<HipEvent> start, stop;  // DEBUG=2 timing
  std::shared_ptr<Allocator> allocator;
  std::mutex modules_mutex;
  std::vector<std::unique_ptr<HipModule>> modules;
};

AmdContext& new_context(int index) {
  static auto* contexts = new std::vector<std::unique_ptr<AmdContext>>();  // reachable, never freed
  auto ctx = std::make_unique<AmdContext>();
  ctx->hip = HipDevice::open(index);
  ctx->stream = ctx->hip->create_stream();
  ctx->start = ctx->hip->create_event();
  ctx->stop = ctx->hip->create_event();
  ctx->allocator = std::make_shared<LruAllocator>(
      std::make_shared<HipAllocator>(*ctx->hip, *ctx->stream), kMaxCachedBytes);
  contexts->push_back(std::move(ctx));
  return *contexts->back();
}

class AmdProgram : public Program {
 public:
  AmdProgram(KernelSource src, AmdKernelBinary bin, hip::hipFunction_t fn)
      : Program(std::move(src)), binary_(std::move(bin)), fn_(fn) {}
  const AmdKernelBinary& binary() const { return binary_; }
  hip::hipFunction_t function() const { return fn_; }

 private:
  AmdKernelBinary binary_;
  hip::hipFunction_t fn_;
};

class AmdDevice : public Device {
 public:
  AmdDevice(std::string name, int index)
      : name_(std::move(name)),
        ctx_(new_context(index)),
        target_(amd_codegen_target(ctx_.hip->target().arch)) {}
  const std::string& name() const override { return name_; }
  const CodegenTarget& target() const override { return target_; }
  std::shared_ptr<Allocator> allocator() override { return ctx_.allocator; }

  std::shared_ptr<Program> compile(KernelSource source) override {
    AmdKernelBinary bin = compile_amd_kernel(source, ctx_.hip->target());
    std::unique_ptr<HipModule> module = ctx_.hip->load_module(bin.code_object);
    hip::hipFunction_t fn = module->function(source.entry);
    {
      std::lock_guard lock(ctx_.modules_mutex);
      ctx_.modules.push_back(std::move(module));
    }
    return std::make_shared<AmdProgram>(std::move(source), std::move(bin), fn);
  }

  void launch(const Program& program, std::span<void* const> buffers,
              std::span<const int64_t> vars) override {
    const auto& p = static_cast<const AmdProgram&>(program);
    const AmdKernelBinary& bin = p.binary();
    LaunchDims dims = eval_launch_dims(p.source(), vars, bin.kernel().max_flat_workgroup_size);
    std::vector<uint8_t> kernargs = pack_kernel_args(bin, buffers, vars);
    const bool timed = debug_level() >= 2;
    if (timed) ctx_.start->record(ctx_.stream.get());
    ctx_.hip->launch(p.function(), dims.grid, dims.block, kernargs, ctx_.stream.get(),
                     /*dynamic_lds=*/0);
    if (timed) {
      ctx_.stop->record(ctx_.stream.get());
      ctx_.stop->synchronize();
      fmt::print(stderr, "{:<6} {:<28} {:>9.3f} ms on the GPU  grid {}x{}x{}  block {}x{}x{}\n",
                 name_, p.source().name, HipEvent::elapsed_ms(*ctx_.start, *ctx_.stop),
                 dims.grid[0], dims.grid[1], dims.grid[2], dims.block[0], dims.block[1],
                 dims.block[2]);
    }
  }

  void synchronize() override { ctx_.stream->synchronize(); }

 private:
  std::string name_;
  AmdContext& ctx_;
  CodegenTarget target_;
};

}  // namespace

std::unique_ptr<Device> make_amd_device(const std::string& name) {
  int index = 0;
  if (name != "AMD") {
    std::string_view digits = std::string_view(name).substr(4);  // after "AMD:"
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (name.rfind("AMD:", 0) != 0 || digits.empty() || ec != std::errc() ||
        end != digits.data() + digits.size() || index < 0)
      fail("unknown device '{}': AMD devices are named AMD or AMD:<index>", name);
  }
  return std::make_unique<AmdDevice>(name, index);
}

}  // namespace ugrad
