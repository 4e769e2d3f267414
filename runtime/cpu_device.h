// "CPU": the host. Kernels are compiled to x86 objects through the program cache, loaded into the
// ORC JIT and run on the thread pool over their outermost output loop; buffers are host memory.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/device.h"
#include "runtime/llvm_target.h"

namespace ugrad {

/// The CPU device.
std::unique_ptr<Device> make_cpu_device();

/// Object code for `target` through the program cache (memory + disk); DEBUG=7 prints the
/// assembly. Shared with the NULL device, which compiles as the CPU does and runs nothing.
std::vector<uint8_t> compile_cpu_object(const KernelSource& src, const LlvmTarget& target);

}  // namespace ugrad
