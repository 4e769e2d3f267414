#include "codegen/target.h"

#include "uop/error.h"

namespace ugrad {

CodegenTarget cpu_codegen_target() {
  CodegenTarget t;
  t.name = "cpu";
  t.triple = "x86_64-pc-linux-gnu";
  // NOTE: the JIT compiles for the host's own features; 64 bytes (AVX-512) only steers tile sizes.
  t.simd_bytes = __builtin_cpu_supports("avx512f") ? 64 : 32;
  return t;
}

CodegenTarget amd_codegen_target(const std::string& arch) {
  if (arch.rfind("gfx11", 0) != 0 && arch.rfind("gfx12", 0) != 0)
    fail(
        "codegen: unknown AMD architecture '{}' (known: gfx1100, gfx1101, gfx1102, gfx1200, "
        "gfx1201)",
        arch);
  CodegenTarget t;
  t.name = arch;
  t.triple = "amdgcn-amd-amdhsa";
  t.is_gpu = true;
  t.simd_bytes = 4;
  t.native_half = true;
  t.wave_size = 32;
  t.max_local_bytes = 65536;
  t.has_wmma = true;
  t.has_dot4 = true;
  t.global_address_space = 1;
  return t;
}

}  // namespace ugrad
