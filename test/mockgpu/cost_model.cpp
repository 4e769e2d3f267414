#include "test/mockgpu/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ugrad::mockgpu {

int waves_per_simd(const LaunchCounters& c, const CardModel& card) {
  const int granule = card.vgpr_granule;
  const int vgprs =
      std::max(granule, (static_cast<int>(c.vgprs) + granule - 1) / granule * granule);
  int waves = std::min(card.max_waves_per_simd, card.vgprs_per_simd_lane / vgprs);
  if (c.lds_bytes) {  // workgroups resident per CU by LDS, their waves spread over its SIMDs
    const uint64_t groups = card.lds_per_cu / c.lds_bytes;
    const uint64_t by_lds = groups * c.waves_per_group() / static_cast<uint64_t>(card.simds_per_cu);
    waves = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(waves), by_lds));
  }
  return std::max(1, waves);
}

ModeledTime model_launch(const LaunchCounters& c, const CardModel& card) {
  ModeledTime t;
  const double scale = c.scale();
  const auto scaled = [&](uint64_t n) { return static_cast<double>(n) * scale; };
  // Placement: a workgroup's waves share one CU (CU mode), one wave per SIMD first.
  const uint64_t cus_used = std::clamp<uint64_t>(c.workgroups, 1, static_cast<uint64_t>(card.cus));
  const uint64_t simds_per_group =
      std::min<uint64_t>(c.waves_per_group(), static_cast<uint64_t>(card.simds_per_cu));
  t.simds_used = static_cast<int>(cus_used * simds_per_group);
  t.waves_per_simd = waves_per_simd(c, card);

  t.dram_bytes = scaled(c.vmem_distinct_lines) * static_cast<double>(kLineBytes);
  t.useful_bytes = scaled(c.vmem_used_bytes);
  t.memory_s = t.dram_bytes / card.dram_bytes_per_s;
  t.lines_s = scaled(c.vmem_line_requests) /
              (static_cast<double>(cus_used) * card.lines_per_cu_clock * card.clock_hz);

  const auto cycles = [&](std::initializer_list<InstClass> classes) {
    double sum = 0;
    for (InstClass k : classes) sum += scaled(c.count(k)) * card.issue_cycles[static_cast<int>(k)];
    return sum;
  };
  const double vector_pipe = cycles({InstClass::VALU, InstClass::WMMA, InstClass::DOT4});
  const double scalar_pipe =
      cycles({InstClass::SALU, InstClass::SMEM, InstClass::BRANCH, InstClass::VMEM});
  t.issue_s = std::max(vector_pipe, scalar_pipe) / t.simds_used / card.clock_hz;
  t.lds_s = scaled(c.lds_cycles) / static_cast<double>(cus_used) / card.clock_hz;

  // Latency: waves run in rounds of the resident slots; a round lasts one wave's exposed
  // round trips plus its instructions at one per clock.
  const double waves = static_cast<double>(c.workgroups * c.waves_per_group());
  const double slots = static_cast<double>(t.simds_used) * t.waves_per_simd;
  const double rounds = std::ceil(waves / slots);
  t.latency_s = rounds * (static_cast<double>(c.max_wave_round_trips) * card.memory_latency_s +
                          static_cast<double>(c.max_wave_instructions) / card.clock_hz);

  const std::pair<double, const char*> terms[] = {{t.memory_s, "memory"},
                                                  {t.lines_s, "lines"},
                                                  {t.issue_s, "issue"},
                                                  {t.lds_s, "lds"},
                                                  {t.latency_s, "latency"}};
  const auto* top = std::max_element(std::begin(terms), std::end(terms));
  t.bound = top->second;
  t.overhead_s = card.launch_overhead_s;
  t.seconds = t.overhead_s + top->first;
  t.bandwidth_fraction = t.useful_bytes / t.seconds / card.dram_bytes_per_s;
  return t;
}

std::string describe_launch(std::string_view kernel, const LaunchCounters& c, const ModeledTime& t,
                            const CardModel& card) {
  std::string s = fmt::format(
      "mockgpu: {} MODELED {:.1f} us (cost model v{}, not measured): {:.0f}% of {:.0f} GB/s, "
      "{}-bound;",
      kernel, t.seconds * 1e6, card.version, t.bandwidth_fraction * 100,
      card.dram_bytes_per_s / 1e9, t.bound);
  for (int k = 0; k < kInstClasses; ++k)
    if (c.inst[k]) s += fmt::format(" {} {}", kInstClassNames[k], c.inst[k]);
  const uint64_t vmem = c.count(InstClass::VMEM);
  if (vmem)
    s += fmt::format(", {:.2f} lines/VMEM",
                     static_cast<double>(c.vmem_line_requests) / static_cast<double>(vmem));
  if (c.lds_conflict_cycles) s += fmt::format(", {} LDS conflict cycles", c.lds_conflict_cycles);
  s += fmt::format(", {} waves/SIMD ({} VGPRs)", t.waves_per_simd, c.vgprs);
  if (c.workgroups_emulated != c.workgroups)
    s += fmt::format(", sampled {} of {} workgroups (counts unscaled)", c.workgroups_emulated,
                     c.workgroups);
  return s;
}

}  // namespace ugrad::mockgpu
