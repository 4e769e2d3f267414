// Devices: an allocator, a compiler and a program launcher behind one interface, found by name in
// a registry: "CPU" (cpu_device.h), "NULL" (null_device.h), "NULL:<arch>" and "AMD" (runtime/amd/).
#pragma once
#include <memory>
#include <span>
#include <string>

#include "codegen/codegen.h"
#include "runtime/allocator.h"

namespace ugrad {

/// A kernel compiled for one device, ready to launch.
class Program {
 public:
  virtual ~Program() = default;
  const KernelSource& source() const { return source_; }

 protected:
  explicit Program(KernelSource source) : source_(std::move(source)) {}
  KernelSource source_;
};

class Device {
 public:
  virtual ~Device() = default;
  /// The registry name: "CPU", "NULL", ...
  virtual const std::string& name() const = 0;
  /// The code generation target of this device's kernels.
  virtual const CodegenTarget& target() const = 0;
  virtual std::shared_ptr<Allocator> allocator() = 0;
  /// Compiles a kernel (through the program cache).
  virtual std::shared_ptr<Program> compile(KernelSource source) = 0;
  /// Runs a program on device buffers (by slot) with variable values (in `vars` order).
  virtual void launch(const Program& program, std::span<void* const> buffers,
                      std::span<const int64_t> vars) = 0;
  /// Waits for launched work to finish.
  virtual void synchronize() {}
  /// True when kernels can read host memory in place (buffers may wrap host bytes, no copy).
  virtual bool reads_host_memory() const { return false; }
  /// False for the NULL devices, which compile every kernel and run none: no time or speed
  /// measured on them means anything.
  virtual bool runs_kernels() const { return true; }
};

/// The device with this name (created on first use). Unknown names are an Error listing the known.
Device& get_device(const std::string& name);

/// Copies `bytes` from `src_handle` on `src` to `dst_handle` on `dst`: directly where one side is
/// host memory, else staged through the host.
void copy_between_devices(Device& dst, void* dst_handle, Device& src, void* src_handle,
                          size_t bytes);

}  // namespace ugrad
