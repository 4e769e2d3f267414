#include "runtime/device_features.h"

#include "runtime/device.h"

namespace ugrad {

DeviceFeatures device_features(const std::string& device) {
  Device& d = get_device(device);
  const CodegenTarget& t = d.target();
  return {t.name,           t.is_gpu,   d.runs_kernels(),
          t.wave_size,      t.has_wmma, t.has_dot4 || t.has_vnni,
          t.max_local_bytes};
}

}  // namespace ugrad
