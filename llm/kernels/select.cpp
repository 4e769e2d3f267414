#include "llm/kernels/select.h"

#include "base/env.h"
#include "codegen/kernel_builder.h"

namespace ugrad::llm {

bool kernels_enabled() { return knob_int(Knob::LLM_KERNELS) != 0; }

bool select(const DeviceFeatures& f, const std::optional<KernelNeeds>& needs) {
  return kernels_enabled() && needs && f.is_gpu && f.wave_size == kWave &&
         (!needs->int8_dot || f.int8_dot) && (!needs->wmma || f.wmma) &&
         needs->lds_bytes <= f.lds_bytes;
}

}  // namespace ugrad::llm
