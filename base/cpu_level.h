// The instruction set CPU kernels are compiled for (the CPU_LEVEL knob): the host's own, or AVX2
// without AVX-512 so that the fallback for CPUs without it runs and is tested on one with it.
#pragma once

namespace ugrad {

/// True when CPU_LEVEL=avx2: CPU kernels are compiled for AVX2 and FMA with every AVX-512, AMX
/// and VNNI extension off; false for the default CPU_LEVEL=native. An Error names another value,
/// or a host without AVX2 and FMA.
bool cpu_level_avx2();

}  // namespace ugrad
