// What a device offers hand-written kernels: the question "does this kernel run here, and
// well?" asked of the device by name (llm/kernels), rather than of codegen's target record.
#pragma once
#include <cstdint>
#include <string>

namespace ugrad {

struct DeviceFeatures {
  std::string arch;          // "cpu", or the GPU architecture ("gfx1100")
  bool is_gpu = false;       // workgroups and work-items run in parallel hardware
  bool runs_kernels = true;  // false on the NULL devices, which only compile
  int wave_size = 1;         // lanes per wave (32 on RDNA); 1 on CPUs
  bool wmma = false;         // 16x16x16 half-precision matrix tiles (RDNA3 WMMA)
  bool int8_dot = false;     // int8 dot products of 4-byte words in one instruction
  int64_t lds_bytes = 0;     // workgroup-shared memory per workgroup (0: none)
};

/// The features of the device named `device` ("CPU", "AMD", "NULL:gfx1100", ...).
DeviceFeatures device_features(const std::string& device);

}  // namespace ugrad
