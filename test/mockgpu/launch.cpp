#include "test/mockgpu/launch.h"

#include <fmt/format.h>

#include <xmmintrin.h>
#include <algorithm>

#include "base/error.h"

namespace ugrad::mockgpu {

namespace {

// kernel_code_properties bits (AMDHSAKernelDescriptor.h).
constexpr int kPrivateSegmentBuffer = 0, kDispatchPtr = 1, kQueuePtr = 2, kKernargPtr = 3,
              kDispatchId = 4, kFlatScratchInit = 5, kPrivateSegmentSize = 6, kWave32 = 10;
// compute_pgm_rsrc2 fields.
int user_sgpr_count(uint32_t rsrc2) { return static_cast<int>(rsrc2 >> 1 & 0x1f); }
bool wg_id_enabled(uint32_t rsrc2, int dim) { return rsrc2 >> (7 + dim) & 1; }
bool wg_info_enabled(uint32_t rsrc2) { return rsrc2 >> 10 & 1; }
int vgpr_workitem_ids(uint32_t rsrc2) { return static_cast<int>(rsrc2 >> 11 & 3); }
// compute_pgm_rsrc1 FLOAT_MODE: [13:12] round f32, [15:14] round f16/f64, [17:16] denorm f32.
int denorm_mode_32(uint32_t rsrc1) { return static_cast<int>(rsrc1 >> 16 & 3); }
// compute_pgm_rsrc1 [5:0] GRANULATED_WORKITEM_VGPR_COUNT: blocks of 8 VGPRs in wave32 (gfx10+).
uint32_t vgprs_of(uint32_t rsrc1) { return ((rsrc1 & 0x3f) + 1) * 8; }

// splitmix64: a small portable generator, so one seed gives one order on every platform.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Fisher-Yates.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next() % i]);
  }
};

// Sets MXCSR flush-to-zero/denormals-are-zero for the run when the kernel flushes f32 denormals.
struct FlushScope {
  unsigned saved;
  explicit FlushScope(bool flush) : saved(_mm_getcsr()) {
    if (flush) _mm_setcsr(saved | 0x8040);
  }
  ~FlushScope() { _mm_setcsr(saved); }
};

}  // namespace

void fill_poison(void* p, size_t bytes) {
  auto* out = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 4)
    std::memcpy(out + i, &kPoisonWord, std::min<size_t>(4, bytes - i));
}

namespace {

// Memory a launch starts with: the poison word, or zeros.
void fill_fresh(std::vector<uint8_t>& bytes, bool poison) {
  if (poison)
    fill_poison(bytes.data(), bytes.size());
  else
    std::fill(bytes.begin(), bytes.end(), 0);
}

// Sets wave wi of workgroup group_id up as the hardware does at dispatch.
void start_wave(const LaunchParams& p, Dispatch& d, Workgroup& wg, int wi,
                const uint32_t (&group_id)[3], uint32_t entry, bool poison) {
  const KernelDescriptor& kd = p.descriptor;
  const uint32_t rsrc2 = kd.compute_pgm_rsrc2;
  const int user_sgprs = user_sgpr_count(rsrc2);
  const uint64_t threads = uint64_t{p.block[0]} * p.block[1] * p.block[2];
  Wave& w = *wg.waves[wi];
  std::memset(w.s, 0, sizeof(w.s));
  w.scc = false;
  w.ip = entry;
  w.done = w.at_barrier = false;
  w.dispatch = &d;
  w.group = &wg;
  w.last_range = {0, 0};
  w.pending_vm = w.fresh_vm = 0;
  w.round_trips = w.far_round_trips = w.instructions = 0;
  w.fresh_far = false;
  w.scratch.resize(size_t{d.scratch_per_lane} * kLanes);
  fill_fresh(w.scratch, poison);
  // User SGPRs in enable-bit order, then the system SGPRs at USER_SGPR_COUNT.
  int s = 0;
  auto put64 = [&](uint64_t v) {
    w.s[s] = static_cast<uint32_t>(v);
    w.s[s + 1] = static_cast<uint32_t>(v >> 32);
    s += 2;
  };
  const uint16_t props = kd.kernel_code_properties;
  if (props >> kDispatchPtr & 1) put64(p.dispatch_packet);
  if (props >> kQueuePtr & 1) put64(0);
  if (props >> kKernargPtr & 1) put64(p.kernarg);
  if (props >> kDispatchId & 1) put64(0);
  if (props >> kFlatScratchInit & 1) put64(0);
  if (props >> kPrivateSegmentSize & 1) w.s[s++] = d.scratch_per_lane;
  if (s > user_sgprs)
    fail("mockgpu: kernel {}: {} user SGPRs enabled but USER_SGPR_COUNT is {}", p.kernel, s,
         user_sgprs);
  s = user_sgprs;
  for (int dim = 0; dim < 3; ++dim)
    if (wg_id_enabled(rsrc2, dim)) w.s[s++] = group_id[dim];
  if (wg_info_enabled(rsrc2)) w.s[s++] = 0;
  // EXEC: the lanes of this wave that are work-items; v0: packed workitem ids.
  const uint64_t first = uint64_t(wi) * kLanes;
  const uint64_t lanes = std::min<uint64_t>(kLanes, threads - first);
  w.s[kExec] = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t t = first + static_cast<uint64_t>(l);
    const uint32_t x = static_cast<uint32_t>(t % p.block[0]);
    const uint32_t y = static_cast<uint32_t>(t / p.block[0] % p.block[1]);
    const uint32_t z = static_cast<uint32_t>(t / (uint64_t{p.block[0]} * p.block[1]));
    w.v[0][l] = vgpr_workitem_ids(rsrc2) == 0 ? x : (x | y << 10 | z << 20);
  }
}

}  // namespace

uint64_t run_wave(Wave& w) {
  const Inst* insts = w.dispatch->program->insts.data();
  const uint32_t n = static_cast<uint32_t>(w.dispatch->program->insts.size());
  uint64_t count = 0;
  while (!w.done && !w.at_barrier) {
    if (w.ip >= n) w.fail(insts[n - 1], "ran past the end of the code object");
    const Inst& in = insts[w.ip];
    w.next = w.ip + 1;
    in.fn(w, in);
    w.ip = w.next;
    ++count;
    ++w.dispatch->counters.inst[static_cast<int>(in.cls)];
  }
  w.instructions += count;
  return count;
}

LaunchCounters launch_kernel(const LaunchParams& p, const MemoryMap& memory,
                             const LaunchOptions& options, std::vector<Footprint>* touched) {
  const KernelDescriptor& kd = p.descriptor;
  if (!(kd.kernel_code_properties >> kWave32 & 1))
    fail("mockgpu: kernel {}: only wave32 kernels are emulated", p.kernel);
  if (kd.kernel_code_properties & (1u << kPrivateSegmentBuffer))
    fail("mockgpu: kernel {}: the private segment buffer user SGPRs are not modelled", p.kernel);
  const int32_t entry = p.program->index_at(p.entry);
  if (entry < 0) fail("mockgpu: kernel {}: entry 0x{:x} is not an instruction", p.kernel, p.entry);
  const uint64_t threads = uint64_t{p.block[0]} * p.block[1] * p.block[2];
  if (threads == 0 || threads > 1024)
    fail("mockgpu: kernel {}: workgroup of {} work-items (1..1024)", p.kernel, threads);
  Dispatch d;
  d.kernel = p.kernel;
  d.program = p.program;
  d.memory = &memory;
  d.lds_size = kd.group_segment_fixed_size + p.dynamic_lds;
  if (d.lds_size > 65536)
    fail("mockgpu: kernel {}: {} bytes of LDS (max 65536)", p.kernel, d.lds_size);
  d.scratch_per_lane = kd.private_segment_fixed_size;
  d.ftz32 = denorm_mode_32(kd.compute_pgm_rsrc1) != 3;
  FlushScope flush(d.ftz32);

  const int num_waves = static_cast<int>((threads + kLanes - 1) / kLanes);
  LaunchCounters& c = d.counters;
  for (int dim = 0; dim < 3; ++dim) {
    c.grid[dim] = p.grid[dim];
    c.block[dim] = p.block[dim];
  }
  c.workgroups = uint64_t{p.grid[0]} * p.grid[1] * p.grid[2];
  c.vgprs = vgprs_of(kd.compute_pgm_rsrc1);
  c.sgprs = p.sgprs;
  c.lds_bytes = d.lds_size;
  c.scratch_bytes = d.scratch_per_lane;

  // The workgroups to run (every sample_every-th linear id), in a seeded shuffled order.
  const uint32_t every = std::max<uint32_t>(1, options.sample_every);
  std::vector<uint64_t> order;
  order.reserve(c.workgroups / every + 1);
  for (uint64_t id = 0; id < c.workgroups; id += every) order.push_back(id);
  Rng rng{options.seed};
  if (options.seed) rng.shuffle(order);
  c.workgroups_emulated = order.size();

  Workgroup wg;
  for (int i = 0; i < num_waves; ++i) wg.waves.push_back(std::make_unique<Wave>());
  std::vector<Wave*> round;
  round.reserve(wg.waves.size());
  for (uint64_t linear : order) {
    const uint32_t group_id[3] = {
        static_cast<uint32_t>(linear % p.grid[0]),
        static_cast<uint32_t>(linear / p.grid[0] % p.grid[1]),
        static_cast<uint32_t>(linear / (uint64_t{p.grid[0]} * p.grid[1]))};
    ++d.group_serial;
    wg.lds.resize(d.lds_size);
    fill_fresh(wg.lds, options.poison);
    for (int wi = 0; wi < num_waves; ++wi)
      start_wave(p, d, wg, wi, group_id, static_cast<uint32_t>(entry), options.poison);
    // Rounds: each wave runs to a barrier or its end, in a shuffled order; a barrier
    // releases when every wave that has not ended has reached it.
    for (;;) {
      round.clear();
      for (auto& wp : wg.waves)
        if (!wp->done) round.push_back(wp.get());
      if (round.empty()) break;
      if (options.seed) rng.shuffle(round);
      for (Wave* wp : round) run_wave(*wp);
      for (auto& wp : wg.waves) wp->at_barrier = false;
    }
    for (auto& wp : wg.waves) {
      c.round_trips += wp->round_trips;
      c.far_round_trips += wp->far_round_trips;
      c.max_wave_round_trips = std::max(c.max_wave_round_trips, wp->round_trips);
      c.max_wave_instructions = std::max(c.max_wave_instructions, wp->instructions);
    }
    c.waves_emulated += wg.waves.size();
  }
  c.vmem_distinct_lines = d.lines.size();
  c.vmem_used_line_bytes = d.lines.used_request_bytes();
  c.vmem_used_bytes = d.lines.used_bytes();
  if (touched) *touched = footprints(d.lines, memory);
  return c;
}

}  // namespace ugrad::mockgpu
