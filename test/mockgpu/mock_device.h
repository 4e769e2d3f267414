// A HipDevice on libmockhip.so (the gfx1100 emulator; its path comes in as UGRAD_MOCKHIP_LIB) and
// helpers that move vectors in and out, for the suites that run kernels on the emulator.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/env.h"
#include "runtime/amd/hip_device.h"

namespace ugrad::test {

struct MockDevice {
  ScopedKnob lib{Knob::HIP_LIB, UGRAD_MOCKHIP_LIB};
  std::unique_ptr<HipDevice> dev = HipDevice::open(0);
  std::vector<void*> buffers;  // released with the device

  MockDevice() = default;
  MockDevice(const MockDevice&) = delete;
  MockDevice& operator=(const MockDevice&) = delete;
  ~MockDevice() {
    for (void* p : buffers) dev->release(p);
  }
  /// A device buffer holding `v` (at least one byte), as the kernel argument's address.
  template <typename T>
  uint64_t upload(const std::vector<T>& v) {
    void* p = dev->allocate(std::max<size_t>(1, v.size() * sizeof(T)));
    dev->copy_to_device(p, v.data(), v.size() * sizeof(T));
    buffers.push_back(p);
    return reinterpret_cast<uint64_t>(p);
  }
  /// The first n elements of a device buffer.
  template <typename T>
  std::vector<T> download(uint64_t p, size_t n) {
    std::vector<T> v(n);
    dev->copy_to_host(v.data(), reinterpret_cast<void*>(p), n * sizeof(T));
    return v;
  }
};

}  // namespace ugrad::test
