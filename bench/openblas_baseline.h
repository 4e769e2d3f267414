// OpenBLAS as a fair baseline: it picks its kernels from CPUID, and on a virtual CPU it may fall
// back to its slowest core type (Prescott). use_native_openblas_kernels() re-executes the
// benchmark with the core type the CPU really supports.
#pragma once
#include <cblas.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ugrad::bench {

/// Call first thing in main(): may re-execute the program with OPENBLAS_CORETYPE set.
inline void use_native_openblas_kernels(char** argv) {
  if (!std::getenv("OPENBLAS_CORETYPE") && std::string(openblas_get_corename()) == "Prescott" &&
      __builtin_cpu_supports("avx2")) {
    setenv("OPENBLAS_CORETYPE", __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell", 1);
    execv("/proc/self/exe", argv);
  }
}

}  // namespace ugrad::bench
