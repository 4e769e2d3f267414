#include "runtime/device.h"

#include <map>
#include <mutex>

#include "base/error.h"
#include "base/quote.h"
#include "runtime/amd/amd_device.h"
#include "runtime/amd/null_amd_device.h"
#include "runtime/cpu_device.h"
#include "runtime/null_device.h"

namespace ugrad {

Device& get_device(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Device>> devices;
  std::lock_guard lock(mutex);
  if (auto it = devices.find(name); it != devices.end()) return *it->second;
  std::unique_ptr<Device> d;
  if (name == "CPU")
    d = make_cpu_device();
  else if (name == "NULL")
    d = make_null_device();
  else if (name.rfind("NULL:", 0) == 0)
    d = make_null_amd_device(name.substr(5));
  else if (name == "AMD" || name.rfind("AMD:", 0) == 0)
    d = make_amd_device(name);
  else
    fail("unknown device {} (known: CPU, NULL, NULL:<amd-arch>, AMD, AMD:<index>)", quote(name));
  return *devices.emplace(name, std::move(d)).first->second;
}

void copy_between_devices(Device& dst, void* dst_handle, Device& src, void* src_handle,
                          size_t bytes) {
  Allocator& to = *dst.allocator();
  Allocator& from = *src.allocator();
  if (const void* host = from.as_host_ptr(src_handle)) return to.copy_in(dst_handle, host, bytes);
  if (void* host = to.as_host_ptr(dst_handle)) return from.copy_out(host, src_handle, bytes);
  std::vector<std::byte> staged(bytes);
  from.copy_out(staged.data(), src_handle, bytes);
  to.copy_in(dst_handle, staged.data(), bytes);
}

}  // namespace ugrad
