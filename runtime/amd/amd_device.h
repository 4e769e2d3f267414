// "AMD" / "AMD:<n>": an AMD GPU through the dlopen'ed HIP runtime (runtime/amd/hip_device.h).
// Memory is hipMalloc'ed behind an LRU cache of freed buffers; kernels are compiled for the
// device's own gcnArchName, loaded from memory and launched on one stream with kernargs packed from
// the code object's metadata and launch dims evaluated from the kernel's index expressions. DEBUG=2
// adds each kernel's GPU time from HIP events.
#pragma once
#include <memory>
#include <string>

#include "runtime/device.h"

namespace ugrad {

/// The AMD device `name` ("AMD" = "AMD:0"). No HIP library, no GPU, a bad index or an
/// architecture the compiler does not know are each an Error saying which.
std::unique_ptr<Device> make_amd_device(const std::string& name);

}  // namespace ugrad
