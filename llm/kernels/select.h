// The one choice of a hand-written kernel: each family says what it needs of a device at a shape
// (its *_needs function: nothing where the shape is not one it takes), and select() asks the
// device's real features and LLM_KERNELS.
#pragma once
#include <cstdint>
#include <optional>

#include "runtime/device_features.h"

namespace ugrad::llm {

struct KernelNeeds {
  bool int8_dot = false;  // int8 dot products of 4-byte words (v_dot4)
  bool wmma = false;      // 16x16x16 matrix tiles
  int64_t lds_bytes = 0;  // workgroup-shared memory of one workgroup
};

/// Whether llm/kernels' own paths are on (LLM_KERNELS, default 1; 0: the generic tensor paths
/// only, for A/B comparisons).
bool kernels_enabled();

/// Whether a hand-written GPU kernel with `needs` (none: the shape is not one it takes) runs on
/// `f`: kernels enabled, a GPU with waves of kWave lanes (the kernels' layout), and every need met,
/// its LDS within the device's.
bool select(const DeviceFeatures& f, const std::optional<KernelNeeds>& needs);

}  // namespace ugrad::llm
