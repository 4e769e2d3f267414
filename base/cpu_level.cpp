#include "base/cpu_level.h"

#include <string>

#include "base/env.h"
#include "base/error.h"
#include "base/quote.h"

namespace ugrad {

bool cpu_level_avx2() {
  const std::string level = knob_str(Knob::CPU_LEVEL);
  if (level == "native") return false;
  if (level != "avx2") fail("CPU_LEVEL must be native or avx2, got {}", quote(level));
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    fail("CPU_LEVEL=avx2: this CPU lacks AVX2 or FMA");
  return true;
}

}  // namespace ugrad
