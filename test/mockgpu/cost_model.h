// A cost model of an RX 7900 XTX (Navi 31, gfx1100) that turns the emulator's launch counters
// into a MODELED kernel time: never a measurement. Its rates, latencies and overheads are
// published measurements (rx7900xtx.inc, each row a range with its source), so every time is a
// range: the fast corner takes every row's best value, the slow corner its worst, the middle
// their means. Formula, rows and assumptions: docs/rdna3.md ("Cost model").
#pragma once
#include <iterator>
#include <span>
#include <string>
#include <string_view>

#include "test/mockgpu/counters.h"

namespace ugrad::mockgpu {

/// What a row of the card's data rests on.
enum class Basis { Measured, Derived, Assumption };

/// One row of rx7900xtx.inc.
struct Measurement {
  const char* key;
  double lo, hi;
  const char* unit;
  Basis basis;
  const char* conditions;
  const char* source;
};

/// Every row, in file order.
std::span<const Measurement> card_measurements();
/// The row named `key`; throws when there is none.
const Measurement& measurement(std::string_view key);

/// Which end of every row's range a modeled time takes.
enum class Corner { Fast, Mid, Slow };
/// How the runtime submits kernels (the launch overhead's row).
enum class Submission { Stream, Graph };

/// The card the model describes; the defaults are the RX 7900 XTX (docs/rdna3.md).
struct CardModel {
  int version = 3;  // bump when the formula, a counter it reads or a row's meaning changes
  int cus = 96;
  int simds_per_cu = 2;
  Submission submission = Submission::Stream;
  double spec_dram_bytes_per_s = 960e9;  // the spec peak, only for "% of peak" figures
  double lines_per_cu_clock = 1.0;       // 128-byte line requests the L0 path serves per CU clock
  int max_waves_per_simd = 16;
  int vgprs_per_simd_lane = 1536;  // 192 KiB register file per SIMD in wave32
  int vgpr_granule = 24;           // wave32 allocation granule on gfx1100
  uint32_t lds_per_cu = 65536;     // a WGP's 128 KiB shared by its two CUs
  // Issue cycles per wave32 instruction on its SIMD, by class in InstClass order (VALU SALU VMEM
  // SMEM LDS WMMA DOT4 TRANS VALU64 BRANCH WAIT): transcendentals at a quarter of the VALU rate
  // (RDNA3 ISA), f64 at 1/16 (the spec's FP64 rate against single-issue FP32); WMMA time comes
  // from the measured WMMA rate and LDS time from the counted bank cycles instead.
  double issue_cycles[kInstClasses] = {1, 1, 1, 1, 0, 0, 1, 4, 16, 1, 0};
};

/// The card's rows, its fields and the model's version as a short hash ("a1b2"): any change shows.
std::string model_hash(const CardModel& card = {});
/// "cost model v3 #a1b2".
std::string model_name(const CardModel& card = {});

/// The terms of a launch's time, in the order ModeledTime lists them; the largest names its bound.
inline constexpr const char* kModelTerms[] = {"dram", "infinity-cache", "l2", "lines", "issue",
                                              "lds",  "latency"};

/// A modeled launch: its time at the three corners and, at the middle, the terms and what
/// decided them.
struct ModeledTime {
  double seconds = 0;  // middle corner: overhead + the combined terms
  double fast_s = 0, slow_s = 0;
  double dram_s = 0;      // bytes from and to DRAM / DRAM rate
  double infinity_s = 0;  // bytes found in the Infinity Cache / its rate
  double l2_s = 0;        // bytes found in the L2 (an earlier launch or workgroup read them) / rate
  double lines_s = 0;     // line requests / (CUs in use x lines per clock)
  double issue_s = 0;     // busiest SIMD pipe (vector ALU by class plus WMMA, or scalar)
  double lds_s = 0;       // LDS bank cycles at the CUs in use
  double latency_s = 0;   // rounds of resident waves x one wave's round trips and instructions
  double overhead_s = 0;  // per launch, by the submission path
  const char* bound = "";         // the largest term
  double dram_bytes = 0;          // whole launch (scaled when sampled), reads and writes
  double cached_bytes = 0;        // whole launch, reads found in the L2 or the Infinity Cache
  double useful_bytes = 0;        // distinct bytes the launch reads or writes (scaled)
  double bandwidth_fraction = 0;  // useful bytes / seconds / spec DRAM bandwidth
  int waves_per_simd = 0;         // occupancy
  int simds_used = 0;
};

/// The modeled time of one launch from its counters (scaled up when it was sampled).
ModeledTime model_launch(const LaunchCounters& c, const CardModel& card = {});

/// A sum of modeled launches (a step, a layer): the corners' times, the launch overheads apart,
/// bytes, and the time of the launches each term bounded (less their overhead). Sums and
/// differences of steps combine them term by term.
struct ModeledSum {
  double seconds = 0, fast_s = 0, slow_s = 0, overhead_s = 0;
  double dram_bytes = 0, cached_bytes = 0, scratch_bytes = 0;
  double launches = 0;
  double bound_s[std::size(kModelTerms)] = {};  // by kModelTerms

  void add(const ModeledTime& t, const LaunchCounters& c);
  ModeledSum& operator+=(const ModeledSum& o) { return combine(o, 1); }
  ModeledSum& operator-=(const ModeledSum& o) { return combine(o, -1); }
  ModeledSum& operator*=(double k);
  /// "dram 20.1 ms, latency 3.2 ms, ..." (the terms that bound any launch, largest first).
  std::string describe_bounds() const;

 private:
  ModeledSum& combine(const ModeledSum& o, double sign);
};
inline ModeledSum operator+(ModeledSum a, const ModeledSum& b) { return a += b; }
inline ModeledSum operator-(ModeledSum a, const ModeledSum& b) { return a -= b; }
inline ModeledSum operator*(double k, ModeledSum a) { return a *= k; }

/// Waves per SIMD the kernel's VGPRs and LDS allow (at most the card's maximum).
int waves_per_simd(const LaunchCounters& c, const CardModel& card = {});

/// "12.3 (11.0-13.1)": a middle value and its range, as a figure prints.
std::string format_range(double mid, double a, double b, int decimals = 1);

/// One line for DEBUG>=2: "mockgpu: K MODELED 3.1 (2.9-3.4) us (cost model v3 #a1b2, not
/// measured): ...".
std::string describe_launch(std::string_view kernel, const LaunchCounters& c, const ModeledTime& t,
                            const CardModel& card = {});

}  // namespace ugrad::mockgpu
