// Launching a kernel on the emulator exactly as hardware does, from its 64-byte kernel
// descriptor: user SGPRs per the enable bits (dispatch pointer, queue pointer, kernarg pointer,
// dispatch id, ...), workgroup ids after USER_SGPR_COUNT, workitem ids packed in v0
// (x | y<<10 | z<<20), LDS and scratch sizes, FLOAT_MODE. Workgroups run one after another; the
// waves of a workgroup run in rounds, each until s_barrier or s_endpgm. To expose bugs a real card
// shows, LDS and scratch start as a NaN poison pattern and waves and workgroups run in a seeded
// shuffled order (LaunchOptions).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "test/mockgpu/cache.h"
#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

/// The descriptor fields a launch uses (llvm/Support/AMDHSAKernelDescriptor.h layout).
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t kernarg_size = 0;
  uint32_t compute_pgm_rsrc1 = 0;
  uint32_t compute_pgm_rsrc2 = 0;
  uint16_t kernel_code_properties = 0;
};

struct LaunchParams {
  std::string kernel;
  const Program* program = nullptr;
  uint32_t entry = 0;  // byte offset of the code entry in .text
  KernelDescriptor descriptor;
  uint32_t grid[3] = {1, 1, 1};   // workgroups per dimension
  uint32_t block[3] = {1, 1, 1};  // work-items per workgroup per dimension
  uint32_t dynamic_lds = 0;
  uint64_t kernarg = 0;          // device address of the kernarg segment
  uint64_t dispatch_packet = 0;  // device address of an hsa_kernel_dispatch_packet_t
  uint32_t sgprs = 0;            // from the code object metadata (.sgpr_count), for the counters
};

/// What fresh device memory, LDS and scratch hold when poisoned: a quiet NaN read as f32, as
/// either f16 or bf16 half, and as f64 (0x7FFF7FFF7FFF7FFF); as an int, 2147450879.
inline constexpr uint32_t kPoisonWord = 0x7FFF7FFFu;

/// Fills `bytes` at p with kPoisonWord (a tail shorter than a word gets its first bytes).
void fill_poison(void* p, size_t bytes);

/// How the emulator runs a launch beyond what the hardware defines (knobs MOCKGPU_POISON,
/// MOCKGPU_SEED, MOCKGPU_SAMPLE in docs/env.md).
struct LaunchOptions {
  bool poison = true;  // LDS and scratch start as kPoisonWord instead of zeros
  uint64_t seed = 1;   // shuffles workgroup order and wave order in each round; 0: in order
  // Emulates only workgroups whose linear id is a multiple of this: for modeling big launches
  // (the counters are scaled by the cost model); the launch's results are then incomplete.
  uint32_t sample_every = 1;
};

/// The AQL dispatch packet layout (hsa_kernel_dispatch_packet_t, 64 bytes).
struct DispatchPacket {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size_x, workgroup_size_y, workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z;
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  uint64_t kernarg_address;
  uint64_t reserved2;
  uint64_t completion_signal;
};
static_assert(sizeof(DispatchPacket) == 64);

/// Runs one wave from w.ip until s_endpgm or s_barrier; returns the instructions executed.
uint64_t run_wave(Wave& w);

/// Runs the kernel to completion (or its sample of workgroups); returns its counters. Errors
/// (unimplemented opcode, stray access, a wave32 check) name the kernel, pc and instruction.
/// `touched`, when given, receives the launch's lines per allocation (for SharedCaches).
LaunchCounters launch_kernel(const LaunchParams& params, const MemoryMap& memory,
                             const LaunchOptions& options = {},
                             std::vector<Footprint>* touched = nullptr);

}  // namespace ugrad::mockgpu
