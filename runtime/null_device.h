// "NULL": schedules and compiles every kernel for the host CPU, as the CPU device does, and runs
// nothing. Memory is not real: copies in are dropped and copies out give zeros.
#pragma once
#include <memory>

#include "runtime/device.h"

namespace ugrad {

/// The NULL device.
std::unique_ptr<Device> make_null_device();

}  // namespace ugrad
