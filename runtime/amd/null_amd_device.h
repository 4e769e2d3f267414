// "NULL:<arch>": the compile-only device for an AMD GPU architecture (NULL:gfx1100). It schedules
// and compiles every kernel for that architecture, validates each code object's metadata against
// the kernel's parameters and the launch (kernarg packing, launch dims) as the AMD device would,
// then runs nothing. Memory is not real: copies in are dropped and copies out give zeros.
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"

namespace ugrad {

/// The NULL device for `arch` ("gfx1100"); an unknown arch is an Error listing the known ones.
std::unique_ptr<Device> make_null_amd_device(const std::string& arch);

}  // namespace ugrad
