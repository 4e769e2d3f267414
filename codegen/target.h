// What the code generator needs to know about a target: a small capability record plus the name of
// the renderer hooks it uses. Plain data: codegen knows nothing of devices or the LLVM back end.
#pragma once
#include <string>

namespace ugrad {

/// A code generation target. The LLVM IR renderer is one base; `is_gpu` selects the GPU hooks
/// (kernel calling convention, address spaces, workitem ids) and the capabilities below steer
/// the decompositions and the optimizer.
struct CodegenTarget {
  std::string name;               // "cpu", "gfx1100"
  std::string triple;             // LLVM target triple
  bool is_gpu = false;            // GPU: launch dims instead of a core_id loop split
  int simd_bytes = 32;            // preferred vector register width in bytes
  bool native_half = false;       // half arithmetic is native (else computed in float32)
  bool native_bfloat16 = false;   // bfloat16 arithmetic is native (else computed in float32)
  int wave_size = 1;              // GPU wave (warp) width; 1 on CPUs
  int max_local_bytes = 0;        // workgroup-shared memory (LDS) per workgroup
  bool has_wmma = false;          // matrix-multiply-accumulate intrinsics (RDNA3 WMMA)
  bool has_dot4 = false;          // int8 dot products of one word, any signedness (v_dot4_i32_iu8)
  int prefetch_bytes = 0;         // vector loads of 1-2 byte elements prefetch this far ahead
  bool has_lane_permute = false;  // 16 floats permuted across vector lanes (x86 AVX-512 vpermps)
  bool has_vnni = false;          // int8 dot products of vector words (x86 AVX-512 VNNI vpdpbusd)
  int byte_shuffle_words = 0;     // BYTE_LUT on 4 words up to this many (x86 vpshufb: 8 or 16)
  int global_address_space = 0;   // LLVM address space of buffer pointers
  int local_address_space = 3;    // LLVM address space of workgroup-shared memory
};

/// Vector registers of the target's SIMD width (x86-64: 32 with AVX-512, 16 below it).
inline int vector_registers(const CodegenTarget& target) {
  return target.simd_bytes >= 64 ? 32 : 16;
}

/// The host CPU (x86-64): SIMD width from the host's widest vector ISA (AVX2 under
/// CPU_LEVEL=avx2).
CodegenTarget cpu_codegen_target();
/// An AMD GPU (RDNA3 gfx1100 family, RDNA4 gfx1200): wave32, 64 KiB LDS, WMMA, dot4.
CodegenTarget amd_codegen_target(const std::string& arch);

}  // namespace ugrad
