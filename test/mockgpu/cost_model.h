// A cost model of an RX 7900 XTX (Navi 31, gfx1100) that turns the emulator's launch counters
// into a MODELED kernel time: never a measurement. Formula, parameters and every assumption are
// in docs/rdna3.md ("Cost model"); a printed figure always names the model version.
#pragma once
#include <string>
#include <string_view>

#include "test/mockgpu/counters.h"

namespace ugrad::mockgpu {

/// The card the model describes; the defaults are the RX 7900 XTX (docs/rdna3.md).
struct CardModel {
  int version = 2;  // bump when a parameter, the formula or a counter it reads changes
  int cus = 96;
  int simds_per_cu = 2;
  double clock_hz = 2.5e9;           // boost clock
  double dram_bytes_per_s = 960e9;   // 384-bit GDDR6 at 20 Gbps
  double memory_latency_s = 500e-9;  // assumed load-to-use latency of a DRAM access
  double launch_overhead_s = 3e-6;   // assumed per-launch overhead
  double lines_per_cu_clock = 1.0;   // 128-byte line requests the L0 path serves per CU clock
  int max_waves_per_simd = 16;
  int vgprs_per_simd_lane = 1536;  // 192 KiB register file per SIMD in wave32
  int vgpr_granule = 24;           // wave32 allocation granule on gfx1100
  uint32_t lds_per_cu = 65536;     // a WGP's 128 KiB shared by its two CUs
  // Issue cycles per wave instruction on its SIMD, by class in InstClass order (VALU SALU VMEM
  // SMEM LDS WMMA DOT4 BRANCH WAIT); LDS time comes from the counted bank cycles instead.
  double issue_cycles[kInstClasses] = {1, 1, 1, 1, 0, 32, 1, 1, 0};
};

/// A modeled launch: the time, the terms it is the max of, and what decided them.
struct ModeledTime {
  double seconds = 0;       // overhead + the largest term
  double memory_s = 0;      // DRAM bytes (distinct 128 B lines) / bandwidth
  double lines_s = 0;       // line requests / (CUs in use x lines per clock)
  double issue_s = 0;       // busiest SIMD pipe (VALU+WMMA+dot4, or scalar) at the SIMDs in use
  double lds_s = 0;         // LDS bank cycles at the CUs in use
  double latency_s = 0;     // rounds of resident waves x one wave's round trips and instructions
  double overhead_s = 0;    // per launch
  const char* bound = "";   // the largest term: memory, lines, issue, lds, latency
  double dram_bytes = 0;    // whole launch (scaled when sampled): 128 B x distinct lines
  double useful_bytes = 0;  // distinct bytes the launch reads or writes (scaled)
  double bandwidth_fraction = 0;  // useful bytes / seconds / DRAM bandwidth
  int waves_per_simd = 0;         // occupancy
  int simds_used = 0;
};

/// The modeled time of one launch from its counters (scaled up when it was sampled).
ModeledTime model_launch(const LaunchCounters& c, const CardModel& card = {});

/// Waves per SIMD the kernel's VGPRs and LDS allow (at most the card's maximum).
int waves_per_simd(const LaunchCounters& c, const CardModel& card = {});

/// One line for DEBUG>=2: "mockgpu: K MODELED 3.1 us (cost model v2, not measured): ...".
std::string describe_launch(std::string_view kernel, const LaunchCounters& c, const ModeledTime& t,
                            const CardModel& card = {});

}  // namespace ugrad::mockgpu
