// Per-launch counters of the emulator, for the cost model (cost_model.h) and for tests and
// benchmarks: wave instructions by class, global bytes, 128-byte lines per vector memory
// instruction (coalescing), LDS bank cycles, exposed memory round trips, and the resources the
// kernel descriptor asks for. Plain data: a record crosses the libmockhip.so C boundary as is.
#pragma once
#include <cstdint>

namespace ugrad::mockgpu {

/// What a wave instruction occupies. TRANS: the transcendentals (v_exp/log/rcp/rsq/sqrt/sin/cos);
/// VALU64: the other f64 arithmetic. Waits and hints: s_waitcnt*, s_barrier, s_nop, s_delay_alu,
/// s_clause and the other scheduling/cache hints.
enum class InstClass : uint8_t {
  VALU,
  SALU,
  VMEM,
  SMEM,
  LDS,
  WMMA,
  DOT4,
  TRANS,
  VALU64,
  BRANCH,
  WAIT,
  COUNT
};
inline constexpr int kInstClasses = static_cast<int>(InstClass::COUNT);
inline constexpr const char* kInstClassNames[kInstClasses] = {
    "VALU", "SALU", "VMEM", "SMEM", "LDS", "WMMA", "DOT4", "TRANS", "VALU64", "BRANCH", "WAIT"};

/// Cache line and LDS geometry the counters use (docs/rdna3.md, "Card facts for a cost model").
inline constexpr uint64_t kLineBytes = 128;
inline constexpr int kLdsBanks = 64;  // 4-byte banks
/// The shared caches between the CUs and DRAM (spec; docs/rdna3.md).
inline constexpr uint64_t kL2Bytes = 6ull << 20;
inline constexpr uint64_t kInfinityCacheBytes = 96ull << 20;

/// Counters of one launch. Event counts cover the emulated workgroups only; a sampled launch
/// (emulated < workgroups) is scaled by the cost model (scale()).
struct LaunchCounters {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint64_t workgroups = 0;           // in the grid
  uint64_t workgroups_emulated = 0;  // actually run (all of them unless sampled)
  uint64_t waves_emulated = 0;
  uint64_t inst[kInstClasses] = {};  // wave instructions by class
  uint64_t global_bytes_read = 0;    // global/flat vector loads and atomics, active lanes
  uint64_t global_bytes_written = 0;
  uint64_t smem_bytes_read = 0;        // scalar loads (kernarg, uniform data)
  uint64_t vmem_line_requests = 0;     // sum over global/flat instructions of distinct 128 B lines
  uint64_t vmem_distinct_lines = 0;    // distinct 128 B lines over the launch (DRAM footprint)
  uint64_t vmem_group_read_lines = 0;  // sum over workgroups of the distinct lines each reads
  // Coalescing, as bytes of the lines requested (128 x vmem_line_requests) that are used:
  uint64_t vmem_request_bytes = 0;    // by the requesting instruction (its lanes' union)
  uint64_t vmem_used_line_bytes = 0;  // by the launch (any access to the line)
  uint64_t vmem_used_bytes = 0;       // distinct bytes global/flat accesses touch
  uint64_t lds_cycles = 0;            // sum over DS instructions of their bank cycles
  uint64_t lds_conflict_cycles = 0;   // of which cycles beyond the conflict-free minimum
  uint64_t round_trips = 0;           // waits on outstanding vector memory loads, all waves
  uint64_t far_round_trips = 0;       // of which waits for a line's first touch in the launch
  uint64_t max_wave_round_trips = 0;  // the most any one wave waited
  uint64_t scratch_bytes_read = 0;    // private memory (spills), active lanes
  uint64_t scratch_bytes_written = 0;
  // Where the launch's lines came from, by libmockhip.so's cache model across the launches since
  // the records were last cleared (cache.h), in bytes of 128 B lines for the WHOLE launch
  // (extrapolated when sampled); all zero and cache_accounted false when nobody classified them.
  bool cache_accounted = false;
  double read_bytes_l2 = 0;
  double read_bytes_infinity = 0;
  double read_bytes_dram = 0;
  double written_bytes = 0;  // written back to DRAM in the end
  uint64_t max_wave_instructions = 0;
  // From the kernel descriptor and code object metadata.
  uint32_t vgprs = 0;  // per lane, as granulated in the descriptor
  uint32_t sgprs = 0;
  uint32_t lds_bytes = 0;      // per workgroup (static + dynamic)
  uint32_t scratch_bytes = 0;  // per lane

  uint64_t threads_per_group() const { return uint64_t{block[0]} * block[1] * block[2]; }
  uint64_t waves_per_group() const { return (threads_per_group() + 31) / 32; }
  /// Factor from emulated to whole-launch event counts (1 unless sampled).
  double scale() const {
    return workgroups_emulated ? static_cast<double>(workgroups) / workgroups_emulated : 0.0;
  }
  uint64_t instructions() const {
    uint64_t n = 0;
    for (uint64_t c : inst) n += c;
    return n;
  }
  uint64_t count(InstClass c) const { return inst[static_cast<int>(c)]; }
};

/// One launch as libmockhip.so records it.
struct LaunchRecord {
  char kernel[128] = {};  // truncated, NUL-terminated
  LaunchCounters counters;
};

}  // namespace ugrad::mockgpu
