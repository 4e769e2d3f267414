#include "codegen/target.h"

#include "base/cpu_level.h"
#include "base/error.h"

namespace ugrad {

CodegenTarget cpu_codegen_target() {
  CodegenTarget t;
  t.name = "cpu";
  t.triple = "x86_64-pc-linux-gnu";
  // The JIT compiles for the same features (runtime/llvm_target.h); 64 bytes (AVX-512) steers tile
  // sizes and the register count.
  t.simd_bytes = !cpu_level_avx2() && __builtin_cpu_supports("avx512f") ? 64 : 32;
  // A quantized matvec streams its weight bytes with enough work per byte that the hardware
  // prefetchers fall behind: a Q4_K matvec over 600 MB ran 6.4 GB/s, 13.3 with loads prefetched
  // 2 KiB ahead (Q8_0: 14.5 -> 19.0; 1 and 4 KiB were no better). Half-precision loads too: the
  // decode attention's weighted sum of the f16 values ran 15% faster (F16 weights: no change);
  // f32 loads (activations) gained nothing and slowed 32-row matmuls.
  t.prefetch_bytes = 2048;
  t.has_lane_permute = t.simd_bytes >= 64;
  t.has_vnni = t.simd_bytes >= 64 && __builtin_cpu_supports("avx512vnni");
  // vpshufb: AVX2 on 8 words, AVX-512BW on 16.
  t.byte_shuffle_words = !__builtin_cpu_supports("avx2")                            ? 0
                         : t.simd_bytes >= 64 && __builtin_cpu_supports("avx512bw") ? 16
                                                                                    : 8;
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
