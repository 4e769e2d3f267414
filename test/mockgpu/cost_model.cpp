#include "test/mockgpu/cost_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace ugrad::mockgpu {

namespace {

constexpr Measurement kRows[] = {
#include "test/mockgpu/rx7900xtx.inc"
};

// Flops of one v_wmma_*_16x16x16 (a 16x16x16 product: 4096 multiply-adds).
constexpr double kWmmaFlops = 2.0 * 16 * 16 * 16;

// The value a corner takes from a row whose larger values make kernels faster (a rate) or
// slower (a latency, an overhead).
enum class Better { Higher, Lower };
double pick(std::string_view key, Corner corner, Better better) {
  const Measurement& m = measurement(key);
  if (corner == Corner::Mid) return 0.5 * (m.lo + m.hi);
  return (corner == Corner::Fast) == (better == Better::Higher) ? m.hi : m.lo;
}

// The rows at one corner.
struct Rates {
  double clock_hz, dram, l2, infinity, wmma_flops, lds_efficiency;
  double near_latency, l2_latency, infinity_latency, dram_latency;
  double launch_s, overlap;
};
Rates read_rates(Corner k, Submission submission) {
  const Better hi = Better::Higher, lo = Better::Lower;
  return {pick("clock_hz", k, hi),
          pick("dram_bytes_per_s", k, hi),
          pick("l2_bytes_per_s", k, hi),
          pick("infinity_bytes_per_s", k, hi),
          pick("wmma_flops_per_s", k, hi),
          pick("lds_efficiency", k, hi),
          pick("near_latency_s", k, lo),
          pick("l2_latency_s", k, lo),
          pick("infinity_latency_s", k, lo),
          pick("dram_latency_s", k, lo),
          pick(submission == Submission::Graph ? "graph_launch_s" : "stream_launch_s", k, lo),
          pick("overlap", k, lo)};
}

// The rows at one corner, read from the table once.
const Rates& rates(Corner k, Submission submission) {
  static const Rates table[3][2] = {
      {read_rates(Corner::Fast, Submission::Stream), read_rates(Corner::Fast, Submission::Graph)},
      {read_rates(Corner::Mid, Submission::Stream), read_rates(Corner::Mid, Submission::Graph)},
      {read_rates(Corner::Slow, Submission::Stream), read_rates(Corner::Slow, Submission::Graph)}};
  return table[static_cast<int>(k)][static_cast<int>(submission)];
}

// One corner of a launch's time; terms and placement are filled into t.
double corner_time(const LaunchCounters& c, const CardModel& card, const Rates& r, ModeledTime& t) {
  const double scale = c.scale();
  const auto scaled = [&](uint64_t n) { return static_cast<double>(n) * scale; };
  // Placement: a workgroup's waves share one CU (CU mode); the CUs in use run as many
  // workgroups as occupancy allows, so every SIMD of a CU works once there are waves for it.
  const uint64_t cus_used = std::clamp<uint64_t>(c.workgroups, 1, static_cast<uint64_t>(card.cus));
  const uint64_t waves = std::max<uint64_t>(1, c.workgroups * c.waves_per_group());
  t.simds_used = static_cast<int>(std::min(cus_used * card.simds_per_cu, waves));
  t.waves_per_simd = waves_per_simd(c, card);

  double read_dram = c.read_bytes_dram, written = c.written_bytes;
  double read_infinity = c.read_bytes_infinity, read_l2 = c.read_bytes_l2;
  if (!c.cache_accounted) {  // nobody classified the lines: every one from and to DRAM
    read_dram = scaled(c.vmem_distinct_lines) * static_cast<double>(kLineBytes);
    written = read_infinity = read_l2 = 0;
  }
  // Lines one workgroup reads and another already fetched come from the L2 (each CU has its own
  // L0): every workgroup's distinct lines pass through the L2; those beyond the launch's first
  // touches are hits there.
  read_l2 += std::max(0.0, scaled(c.vmem_group_read_lines) * static_cast<double>(kLineBytes) -
                               (read_dram + read_infinity + read_l2));
  t.dram_bytes = read_dram + written;
  t.cached_bytes = read_infinity + read_l2;
  t.useful_bytes = scaled(c.vmem_used_bytes);
  t.dram_s = t.dram_bytes / r.dram;
  t.infinity_s = read_infinity / r.infinity;
  t.l2_s = read_l2 / r.l2;
  t.lines_s = scaled(c.vmem_line_requests) /
              (static_cast<double>(cus_used) * card.lines_per_cu_clock * r.clock_hz);

  const auto cycles = [&](std::initializer_list<InstClass> classes) {
    double sum = 0;
    for (InstClass k : classes) sum += scaled(c.count(k)) * card.issue_cycles[static_cast<int>(k)];
    return sum;
  };
  const double simds = t.simds_used;
  const double wmma_s = scaled(c.count(InstClass::WMMA)) * kWmmaFlops /
                        (r.wmma_flops / (card.cus * card.simds_per_cu)) / simds;
  const double vector_s =
      cycles({InstClass::VALU, InstClass::DOT4, InstClass::TRANS, InstClass::VALU64}) / simds /
          r.clock_hz +
      wmma_s;
  const double scalar_s =
      cycles({InstClass::SALU, InstClass::SMEM, InstClass::BRANCH, InstClass::VMEM}) / simds /
      r.clock_hz;
  t.issue_s = std::max(vector_s, scalar_s);
  t.lds_s = scaled(c.lds_cycles) / static_cast<double>(cus_used) / r.clock_hz / r.lds_efficiency;

  // Latency: waves run in rounds of the resident slots; a round lasts one wave's exposed round
  // trips plus its instructions at one per clock. A far trip waits for the level its launch's
  // first-touched bytes came from (in their proportions), a near one for the L0/L1.
  const double slots = simds * t.waves_per_simd;
  const double rounds = std::ceil(static_cast<double>(waves) / slots);
  const double first = read_dram + read_infinity + read_l2;
  const double far_latency = first > 0
                                 ? (read_dram * r.dram_latency +
                                    read_infinity * r.infinity_latency + read_l2 * r.l2_latency) /
                                       first
                                 : r.dram_latency;
  const double far =
      c.round_trips ? static_cast<double>(c.far_round_trips) / static_cast<double>(c.round_trips)
                    : 0.0;
  const double trip = far * far_latency + (1 - far) * r.near_latency;
  t.latency_s = rounds * (static_cast<double>(c.max_wave_round_trips) * trip +
                          static_cast<double>(c.max_wave_instructions) / r.clock_hz);

  // The largest term, plus a fraction of the others (the overlap row).
  const double terms[] = {t.dram_s,  t.infinity_s, t.l2_s,     t.lines_s,
                          t.issue_s, t.lds_s,      t.latency_s};
  static_assert(std::size(terms) == std::size(kModelTerms));
  double sum = 0;
  for (double term : terms) sum += term;
  const auto top = std::max_element(std::begin(terms), std::end(terms)) - std::begin(terms);
  t.bound = kModelTerms[top];
  t.overhead_s = r.launch_s;
  return t.overhead_s + terms[top] + r.overlap * (sum - terms[top]);
}

}  // namespace

std::span<const Measurement> card_measurements() { return kRows; }

const Measurement& measurement(std::string_view key) {
  for (const Measurement& m : kRows)
    if (key == m.key) return m;
  throw std::invalid_argument(fmt::format("cost model: no row '{}' in rx7900xtx.inc", key));
}

std::string model_hash(const CardModel& card) {
  std::string text =
      fmt::format("v{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", card.version, card.cus, card.simds_per_cu,
                  static_cast<int>(card.submission), card.spec_dram_bytes_per_s,
                  card.lines_per_cu_clock, card.max_waves_per_simd, card.vgprs_per_simd_lane,
                  card.vgpr_granule, card.lds_per_cu, fmt::join(card.issue_cycles, ","));
  for (const Measurement& m : kRows) text += fmt::format("|{}:{:.6g}:{:.6g}", m.key, m.lo, m.hi);
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char ch : text) h = (h ^ ch) * 16777619u;
  return fmt::format("{:04x}", (h ^ h >> 16) & 0xffff);
}

std::string model_name(const CardModel& card) {
  return fmt::format("cost model v{} #{}", card.version, model_hash(card));
}

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
  ModeledTime t, scratch;
  t.fast_s = corner_time(c, card, rates(Corner::Fast, card.submission), scratch);
  t.slow_s = corner_time(c, card, rates(Corner::Slow, card.submission), scratch);
  t.seconds = corner_time(c, card, rates(Corner::Mid, card.submission), t);
  t.bandwidth_fraction = t.useful_bytes / t.seconds / card.spec_dram_bytes_per_s;
  return t;
}

void ModeledSum::add(const ModeledTime& t, const LaunchCounters& c) {
  seconds += t.seconds;
  fast_s += t.fast_s;
  slow_s += t.slow_s;
  overhead_s += t.overhead_s;
  dram_bytes += t.dram_bytes;
  cached_bytes += t.cached_bytes;
  scratch_bytes += static_cast<double>(c.scratch_bytes_read + c.scratch_bytes_written) * c.scale();
  launches += 1;
  for (size_t i = 0; i < std::size(kModelTerms); ++i)
    if (std::string_view(t.bound) == kModelTerms[i]) bound_s[i] += t.seconds - t.overhead_s;
}

ModeledSum& ModeledSum::combine(const ModeledSum& o, double sign) {
  for (auto [mine, theirs] : {std::pair{&seconds, o.seconds},
                              {&fast_s, o.fast_s},
                              {&slow_s, o.slow_s},
                              {&overhead_s, o.overhead_s},
                              {&dram_bytes, o.dram_bytes},
                              {&cached_bytes, o.cached_bytes},
                              {&scratch_bytes, o.scratch_bytes},
                              {&launches, o.launches}})
    *mine += sign * theirs;
  for (size_t i = 0; i < std::size(kModelTerms); ++i) bound_s[i] += sign * o.bound_s[i];
  return *this;
}

ModeledSum& ModeledSum::operator*=(double k) {
  const ModeledSum copy = *this;
  *this = ModeledSum{};
  return combine(copy, k);
}

std::string ModeledSum::describe_bounds() const {
  std::vector<std::pair<double, const char*>> terms;
  for (size_t i = 0; i < std::size(kModelTerms); ++i)
    if (bound_s[i] > 1e-9) terms.emplace_back(bound_s[i], kModelTerms[i]);
  std::sort(terms.begin(), terms.end(), std::greater<>());
  std::string s;
  for (const auto& [sec, name] : terms)
    s += fmt::format("{}{} {:.3f} ms", s.empty() ? "" : ", ", name, sec * 1e3);
  return s;
}

std::string format_range(double mid, double a, double b, int decimals) {
  return fmt::format("{:.{}f} ({:.{}f}-{:.{}f})", mid, decimals, std::min(a, b), decimals,
                     std::max(a, b), decimals);
}

std::string describe_launch(std::string_view kernel, const LaunchCounters& c, const ModeledTime& t,
                            const CardModel& card) {
  std::string s = fmt::format(
      "mockgpu: {} MODELED {} us ({}, not measured): {:.0f}% of {:.0f} GB/s peak, {}-bound, "
      "{:.0f} KB DRAM, {:.0f} KB cached;",
      kernel, format_range(t.seconds * 1e6, t.fast_s * 1e6, t.slow_s * 1e6), model_name(card),
      t.bandwidth_fraction * 100, card.spec_dram_bytes_per_s / 1e9, t.bound, t.dram_bytes / 1e3,
      t.cached_bytes / 1e3);
  for (int k = 0; k < kInstClasses; ++k)
    if (c.inst[k]) s += fmt::format(" {} {}", kInstClassNames[k], c.inst[k]);
  const uint64_t vmem = c.count(InstClass::VMEM);
  if (vmem)
    s += fmt::format(", {:.2f} lines/VMEM",
                     static_cast<double>(c.vmem_line_requests) / static_cast<double>(vmem));
  if (c.lds_conflict_cycles) s += fmt::format(", {} LDS conflict cycles", c.lds_conflict_cycles);
  if (c.scratch_bytes_read || c.scratch_bytes_written)
    s += fmt::format(", spills: {} B stored, {} B reloaded", c.scratch_bytes_written,
                     c.scratch_bytes_read);
  s += fmt::format(", {} waves/SIMD ({} VGPRs)", t.waves_per_simd, c.vgprs);
  if (c.round_trips)
    s += fmt::format(", {} of {} round trips far", c.far_round_trips, c.round_trips);
  if (c.workgroups_emulated != c.workgroups)
    s += fmt::format(", sampled {} of {} workgroups (counts unscaled)", c.workgroups_emulated,
                     c.workgroups);
  return s;
}

}  // namespace ugrad::mockgpu
