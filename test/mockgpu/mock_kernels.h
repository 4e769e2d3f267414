// Test helpers over the emulated device: LLVM IR compiled for gfx1100 and launched through
// ugrad's HIP loader on libmockhip.so, and the environment the library reads its knobs from.
#pragma once
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/amd/hip_device.h"
#include "test/mockgpu/mock_device.h"

namespace ugrad::test {

/// The emulated device, which also compiles LLVM IR for gfx1100 and launches it.
struct Mock : MockDevice {
  struct Loaded {
    AmdBinary bin;
    std::unique_ptr<HipModule> module;
  };
  /// Compiles `ir` (kernel `name`) for the device and loads it.
  Loaded load(std::string_view ir, std::string_view name) {
    Loaded l{amd_compile(dev->target(), ir, name), nullptr};
    l.module = dev->load_module(l.bin.code_object);
    return l;
  }
  /// Launches kernel `name` with buffer addresses, then scalars, as its arguments.
  void run(const Loaded& l, std::string_view name, std::array<uint32_t, 3> grid,
           std::array<uint32_t, 3> block, std::vector<uint64_t> bufs,
           std::vector<uint64_t> scalars = {}) {
    const AmdKernelInfo& k = l.bin.info.kernel(name);
    std::vector<uint8_t> args = pack_kernargs(k, bufs, scalars);
    dev->launch(l.module->function(name), grid, block, args);
  }
};

/// Sets an environment variable for this object's lifetime. libmockhip.so reads its knobs
/// (MOCKGPU_*, DEBUG) through its own copy of the knob registry, which a ScopedKnob in the test
/// process does not reach; both read the environment.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (previous_)
      setenv(name_, previous_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

}  // namespace ugrad::test
