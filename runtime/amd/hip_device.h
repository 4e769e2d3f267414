// One AMD GPU driven through the dlopen'ed HIP runtime: properties, memory, copies, code object
// modules, kernel launches with packed kernarg buffers, streams and events. RAII wrappers release
// what they own; every HIP failure is an Error naming the call.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/amd/hip_min.h"
#include "runtime/llvm_target.h"

namespace ugrad {

namespace hip {
struct HipApi;
}
using hip::HipApi;

struct HipDeviceInfo {
  int index = 0;
  std::string name;           // "AMD Radeon RX 7900 XTX"
  std::string gcn_arch_name;  // "gfx1100" (feature suffixes stripped)
  int compute_units = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int lds_per_block = 0;
  size_t total_memory = 0;
  int driver_version = 0;
};

class HipStream {
 public:
  ~HipStream();
  HipStream(const HipStream&) = delete;
  HipStream& operator=(const HipStream&) = delete;
  /// Blocks until all work queued on this stream is done.
  void synchronize();
  hip::hipStream_t handle() const { return stream_; }

 private:
  friend class HipDevice;
  HipStream(const HipApi& api, hip::hipStream_t s) : api_(api), stream_(s) {}
  const HipApi& api_;
  hip::hipStream_t stream_;
};

class HipEvent {
 public:
  ~HipEvent();
  HipEvent(const HipEvent&) = delete;
  HipEvent& operator=(const HipEvent&) = delete;
  /// Records the event on `stream` (nullptr: the null stream).
  void record(HipStream* stream);
  /// Waits for the event.
  void synchronize();
  /// Milliseconds between two recorded, completed events.
  static float elapsed_ms(const HipEvent& start, const HipEvent& stop);

 private:
  friend class HipDevice;
  HipEvent(const HipApi& api, hip::hipEvent_t e) : api_(api), event_(e) {}
  const HipApi& api_;
  hip::hipEvent_t event_;
};

/// A loaded code object; kernels are looked up by name.
class HipModule {
 public:
  ~HipModule();
  HipModule(const HipModule&) = delete;
  HipModule& operator=(const HipModule&) = delete;
  /// The kernel `name` (Error naming it if absent).
  hip::hipFunction_t function(std::string_view name) const;

 private:
  friend class HipDevice;
  HipModule(const HipApi& api, hip::hipModule_t m) : api_(api), module_(m) {}
  const HipApi& api_;
  hip::hipModule_t module_;
};

class HipDevice {
 public:
  /// Loads HIP, initializes it and opens device `index`. No library, no device (hipErrorNoDevice /
  /// hipErrorInvalidDevice from a machine without a GPU), a bad index or an architecture the
  /// compiler does not know are each a clear Error.
  static std::unique_ptr<HipDevice> open(int index = 0);

  const HipDeviceInfo& info() const { return info_; }
  /// The compile target for this device (amdgpu_target(gcn_arch_name)).
  const LlvmTarget& target() const { return target_; }

  /// Device memory (Error names the size on failure).
  void* allocate(size_t bytes);
  /// Frees memory from allocate(); nullptr is a no-op.
  void release(void* device_ptr);
  /// Synchronous copies.
  void copy_to_device(void* dst, const void* src, size_t bytes);
  void copy_to_host(void* dst, const void* src, size_t bytes);
  /// Copies ordered on `stream`; the host memory must stay valid until the stream is synchronized.
  void copy_to_device_async(void* dst, const void* src, size_t bytes, HipStream& stream);
  void copy_to_host_async(void* dst, const void* src, size_t bytes, HipStream& stream);

  /// Loads a linked code object (from amd_compile) into a module.
  std::unique_ptr<HipModule> load_module(std::span<const uint8_t> code_object);
  /// Launches `f` over `grid` workgroups of `block` work-items with a packed kernarg segment
  /// (pack_kernargs) on `stream` (nullptr: the null stream). `dynamic_lds` adds to static LDS.
  void launch(hip::hipFunction_t f, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
              std::span<const uint8_t> kernargs, HipStream* stream = nullptr,
              uint32_t dynamic_lds = 0);

  std::unique_ptr<HipStream> create_stream();
  std::unique_ptr<HipEvent> create_event();
  /// Waits for all work on the device.
  void synchronize();

 private:
  HipDevice(const HipApi& api, HipDeviceInfo info, LlvmTarget target)
      : api_(api), info_(std::move(info)), target_(std::move(target)) {}
  void bind() const;  // hipSetDevice: HIP's current device is per host thread
  const HipApi& api_;
  HipDeviceInfo info_;
  LlvmTarget target_;
};

}  // namespace ugrad
