#include "runtime/amd/hip_device.h"

#include <vector>

#include "base/error.h"
#include "runtime/amd/hip_api.h"

namespace ugrad {

using namespace hip;

std::unique_ptr<HipDevice> HipDevice::open(int index) {
  const HipApi& api = hip_api();
  int count = 0;
  hipError_t init = api.hipInit(0);
  hipError_t counted = api.hipGetDeviceCount(&count);
  // Without a GPU, HIP answers hipInit with hipErrorInvalidDevice and the count with
  // hipErrorNoDevice: report that plainly rather than as a failed call.
  if (counted == hipErrorNoDevice || (counted == hipSuccess && count == 0) ||
      init == hipErrorNoDevice || init == hipErrorInvalidDevice)
    fail("AMD device unavailable: {} found no AMD GPU (hipInit: {}, hipGetDeviceCount: {})",
         api.library, api.hipGetErrorName(init), api.hipGetErrorName(counted));
  api.check(init, "hipInit");
  api.check(counted, "hipGetDeviceCount");
  if (index < 0 || index >= count)
    fail("AMD device unavailable: device {} requested, {} has {} device(s)", index, api.library,
         count);

  HipDeviceInfo info;
  info.index = index;
  api.check(api.hipSetDevice(index), fmt::format("hipSetDevice({})", index));
  char name[256] = {};
  api.check(api.hipDeviceGetName(name, sizeof(name) - 1, index), "hipDeviceGetName");
  info.name = name;
  auto attribute = [&](hipDeviceAttribute_t attr, const char* what) {
    int v = 0;
    api.check(api.hipDeviceGetAttribute(&v, attr, index),
              fmt::format("hipDeviceGetAttribute({})", what));
    return v;
  };
  info.compute_units = attribute(hipDeviceAttributeMultiprocessorCount, "MultiprocessorCount");
  info.warp_size = attribute(hipDeviceAttributeWarpSize, "WarpSize");
  info.max_threads_per_block =
      attribute(hipDeviceAttributeMaxThreadsPerBlock, "MaxThreadsPerBlock");
  info.lds_per_block =
      attribute(hipDeviceAttributeMaxSharedMemoryPerBlock, "MaxSharedMemoryPerBlock");
  api.check(api.hipDeviceTotalMem(&info.total_memory, index), "hipDeviceTotalMem");
  api.check(api.hipDriverGetVersion(&info.driver_version), "hipDriverGetVersion");
  std::vector<unsigned char> props(kDevicePropBufferSize, 0);
  api.check(api.hipGetDeviceProperties(props.data(), index), "hipGetDeviceProperties");
  std::string arch = gcn_arch_name_in_properties(props);
  if (arch.empty()) fail("AMD device {} ('{}'): HIP reports no gfx architecture name", index, name);
  info.gcn_arch_name = std::string(amd_arch_base_name(arch));
  // amdgpu_target names the known architectures if this one is not among them.
  LlvmTarget target = amdgpu_target(info.gcn_arch_name);
  // ROCm before 5.5 has no gfx11 ISA tables: hipModuleLoadData would fail later with a vague
  // "no binary for GPU". Say so up front.
  auto [major, minor] = hip_version(info.driver_version);
  if (major < 5 || (major == 5 && minor < 5))
    fail(
        "AMD device unavailable: HIP {}.{} ({}) cannot run {} code objects (install ROCm 5.5 or "
        "newer)",
        major, minor, api.library, info.gcn_arch_name);
  return std::unique_ptr<HipDevice>(new HipDevice(api, std::move(info), std::move(target)));
}

void HipDevice::bind() const {
  api_.check(api_.hipSetDevice(info_.index), fmt::format("hipSetDevice({})", info_.index));
}

void* HipDevice::allocate(size_t bytes) {
  bind();
  void* p = nullptr;
  api_.check(api_.hipMalloc(&p, bytes), fmt::format("hipMalloc({} bytes)", bytes));
  return p;
}

void HipDevice::release(void* device_ptr) {
  if (!device_ptr) return;
  bind();
  api_.check(api_.hipFree(device_ptr), "hipFree");
}

void HipDevice::copy_to_device(void* dst, const void* src, size_t bytes) {
  bind();
  api_.check(api_.hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice),
             fmt::format("hipMemcpy(host->device, {} bytes)", bytes));
}

void HipDevice::copy_to_host(void* dst, const void* src, size_t bytes) {
  bind();
  api_.check(api_.hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost),
             fmt::format("hipMemcpy(device->host, {} bytes)", bytes));
}

void HipDevice::copy_to_device_async(void* dst, const void* src, size_t bytes, HipStream& stream) {
  bind();
  api_.check(api_.hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, stream.handle()),
             fmt::format("hipMemcpyAsync(host->device, {} bytes)", bytes));
}

void HipDevice::copy_to_host_async(void* dst, const void* src, size_t bytes, HipStream& stream) {
  bind();
  api_.check(api_.hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, stream.handle()),
             fmt::format("hipMemcpyAsync(device->host, {} bytes)", bytes));
}

std::unique_ptr<HipModule> HipDevice::load_module(std::span<const uint8_t> code_object) {
  bind();
  hipModule_t m = nullptr;
  // hipModuleLoadData reads the ELF from memory; the size comes from the ELF headers.
  api_.check(api_.hipModuleLoadData(&m, code_object.data()),
             fmt::format("hipModuleLoadData({} bytes, {})", code_object.size(), target_.arch));
  return std::unique_ptr<HipModule>(new HipModule(api_, m));
}

void HipDevice::launch(hipFunction_t f, std::array<uint32_t, 3> grid, std::array<uint32_t, 3> block,
                       std::span<const uint8_t> kernargs, HipStream* stream, uint32_t dynamic_lds) {
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0)
      fail("hip: launch with an empty grid {}x{}x{} or block {}x{}x{}", grid[0], grid[1], grid[2],
           block[0], block[1], block[2]);
  bind();
  // HIP copies the explicit args out of this buffer by the kernel's metadata offsets and fills the
  // hidden args itself (see amd_kernargs.h). The buffer must outlive only this call.
  void* buffer = const_cast<uint8_t*>(kernargs.data());
  size_t size = kernargs.size();
  void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   HIP_LAUNCH_PARAM_END};
  api_.check(api_.hipModuleLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                        dynamic_lds, stream ? stream->handle() : nullptr, nullptr,
                                        size ? extra : nullptr),
             fmt::format("hipModuleLaunchKernel(grid {}x{}x{}, block {}x{}x{}, {} kernarg bytes)",
                         grid[0], grid[1], grid[2], block[0], block[1], block[2], size));
}

std::unique_ptr<HipStream> HipDevice::create_stream() {
  bind();
  hipStream_t s = nullptr;
  api_.check(api_.hipStreamCreate(&s), "hipStreamCreate");
  return std::unique_ptr<HipStream>(new HipStream(api_, s));
}

std::unique_ptr<HipEvent> HipDevice::create_event() {
  bind();
  hipEvent_t e = nullptr;
  api_.check(api_.hipEventCreate(&e), "hipEventCreate");
  return std::unique_ptr<HipEvent>(new HipEvent(api_, e));
}

void HipDevice::synchronize() {
  bind();
  api_.check(api_.hipDeviceSynchronize(), "hipDeviceSynchronize");
}

// Destructors must not throw: a failing release is dropped (the device is likely gone).
HipStream::~HipStream() { api_.hipStreamDestroy(stream_); }
void HipStream::synchronize() {
  api_.check(api_.hipStreamSynchronize(stream_), "hipStreamSynchronize");
}

HipEvent::~HipEvent() { api_.hipEventDestroy(event_); }
void HipEvent::record(HipStream* stream) {
  api_.check(api_.hipEventRecord(event_, stream ? stream->handle() : nullptr), "hipEventRecord");
}
void HipEvent::synchronize() {
  api_.check(api_.hipEventSynchronize(event_), "hipEventSynchronize");
}
float HipEvent::elapsed_ms(const HipEvent& start, const HipEvent& stop) {
  float ms = 0;
  start.api_.check(start.api_.hipEventElapsedTime(&ms, start.event_, stop.event_),
                   "hipEventElapsedTime");
  return ms;
}

HipModule::~HipModule() { api_.hipModuleUnload(module_); }
hipFunction_t HipModule::function(std::string_view name) const {
  hipFunction_t f = nullptr;
  std::string n(name);
  api_.check(api_.hipModuleGetFunction(&f, module_, n.c_str()),
             fmt::format("hipModuleGetFunction('{}')", n));
  return f;
}

}  // namespace ugrad
