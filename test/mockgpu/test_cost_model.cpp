// Per-launch counters, sampling and the RX 7900 XTX cost model on kernels whose answer is known:
// a large copy models at the memory bandwidth, a WMMA loop at the WMMA peak, a chain of dependent
// loads at the memory latency; uncoalesced loads, bank conflicts, few workgroups and low
// occupancy must come out slow.
#include <doctest/doctest.h>

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

#include "base/float16.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch_records.h"
#include "test/mockgpu/mock_kernels.h"

using namespace ugrad;
using mockgpu::InstClass;
using mockgpu::LaunchCounters;
using mockgpu::ModeledTime;
using test::Mock;
using test::ScopedEnv;

namespace {

constexpr const char* kDecls = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";

// Work-item g of `total` copies out[g + j*total] = a[(g + j*total) * stride], j < iters.
constexpr const char* kCopy = R"(
define amdgpu_kernel void @C_copy(ptr addrspace(1) noalias nocapture writeonly align 4 %out,
    ptr addrspace(1) noalias nocapture readonly align 4 %a, i32 %stride, i32 %iters,
    i32 %total) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %jt = mul i32 %j, %total
  %idx = add i32 %g, %jt
  %src = mul i32 %idx, %stride
  %si = zext i32 %src to i64
  %oi = zext i32 %idx to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %si
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %oi
  %v = load float, ptr addrspace(1) %pa, align 4
  store float %v, ptr addrspace(1) %po, align 4
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, %iters
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)";

// Work-item g of `total` sums four float4s a[g + (4j+u)*total], u < 4, per step j < iters: a
// stream read with 2 KiB in flight per wave, as read benchmarks keep many loads going. The sum is
// stored only where it equals %never (so the loads stay; poisoned or zero input never does).
std::string read_kernel() {
  std::string loads, sum = "%acc";
  for (int u = 0; u < 4; ++u) {
    loads += fmt::format(
        "  %o{0} = add i32 %j4, {0}\n  %ot{0} = mul i32 %o{0}, %total\n"
        "  %i{0} = add i32 %g, %ot{0}\n  %x{0} = zext i32 %i{0} to i64\n"
        "  %p{0} = getelementptr inbounds <4 x float>, ptr addrspace(1) %a, i64 %x{0}\n"
        "  %v{0} = load <4 x float>, ptr addrspace(1) %p{0}, align 16\n"
        "  %s{0} = fadd <4 x float> {1}, %v{0}\n",
        u, u ? fmt::format("%s{}", u - 1) : "%acc");
  }
  return fmt::format(R"(
define amdgpu_kernel void @R_sum(ptr addrspace(1) noalias nocapture writeonly align 16 %out,
    ptr addrspace(1) noalias nocapture readonly align 16 %a, i32 %iters, i32 %total,
    float %never) #0 {{
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %acc = phi <4 x float> [ zeroinitializer, %entry ], [ %s3, %loop ]
  %j4 = mul i32 %j, 4
{}  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, %iters
  br i1 %done, label %exit, label %loop
exit:
  %e = extractelement <4 x float> %s3, i32 0
  %hit = fcmp oeq float %e, %never
  br i1 %hit, label %store, label %end
store:
  %oi = zext i32 %g to i64
  %po = getelementptr inbounds <4 x float>, ptr addrspace(1) %out, i64 %oi
  store <4 x float> %s3, ptr addrspace(1) %po, align 16
  br label %end
end:
  ret void
}}
)",
                     loads);
}

constexpr const char* kEmpty = R"(
define amdgpu_kernel void @E_empty() #0 {
entry:
  ret void
}
)";

// Lane l follows next[] `steps` times from l: every load's address is the previous load's value.
constexpr const char* kChase = R"(
define amdgpu_kernel void @L_chase(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %next,
    i32 %steps) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %i = phi i32 [ %tid, %entry ], [ %n, %loop ]
  %ii = zext i32 %i to i64
  %p = getelementptr inbounds i32, ptr addrspace(1) %next, i64 %ii
  %n = load i32, ptr addrspace(1) %p, align 4
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, %steps
  br i1 %done, label %exit, label %loop
exit:
  %ti = zext i32 %tid to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %ti
  store i32 %n, ptr addrspace(1) %po, align 4
  ret void
}
)";

// Work-item t sums 16 independent loads a[t + 32 i], i < 16: issued together, then consumed one
// by one (LLVM waits with a falling vmcnt).
std::string fan_kernel() {
  std::string body, sum = "0";
  for (int i = 0; i < 16; ++i) {
    body += fmt::format(
        "  %i{0} = add i32 %tid, {1}\n  %x{0} = zext i32 %i{0} to i64\n"
        "  %p{0} = getelementptr inbounds i32, ptr addrspace(1) %a, i64 %x{0}\n"
        "  %v{0} = load i32, ptr addrspace(1) %p{0}, align 4\n",
        i, 32 * i);
  }
  for (int i = 0; i < 16; ++i) {
    body += fmt::format("  %s{} = add i32 {}, %v{}\n", i, i ? fmt::format("%s{}", i - 1) : "0", i);
  }
  return fmt::format(
      "define amdgpu_kernel void @L_fan(ptr addrspace(1) noalias %out, "
      "ptr addrspace(1) noalias %a) #0 {{\nentry:\n"
      "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n{}"
      "  %ti = zext i32 %tid to i64\n"
      "  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %ti\n"
      "  store i32 %s15, ptr addrspace(1) %po, align 4\n  ret void\n}}\n",
      body);
}

// Each wave accumulates `iters` 16x16x16 f16 WMMAs of its A and B fragments.
constexpr const char* kWmmaLoop = R"(
declare <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16(<16 x half>, <16 x half>, <8 x float>)
define amdgpu_kernel void @W_loop(ptr addrspace(1) noalias %d, ptr addrspace(1) noalias %a,
    ptr addrspace(1) noalias %b, i32 %iters) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %lane = and i32 %tid, 31
  %l = zext i32 %lane to i64
  %pa = getelementptr inbounds <16 x half>, ptr addrspace(1) %a, i64 %l
  %pb = getelementptr inbounds <16 x half>, ptr addrspace(1) %b, i64 %l
  %va = load <16 x half>, ptr addrspace(1) %pa, align 32
  %vb = load <16 x half>, ptr addrspace(1) %pb, align 32
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %acc = phi <8 x float> [ zeroinitializer, %entry ], [ %acc1, %loop ]
  %acc1 = call <8 x float> @llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16(<16 x half> %va, <16 x half> %vb, <8 x float> %acc)
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, %iters
  br i1 %done, label %exit, label %loop
exit:
  %base = mul i32 %wg, 64
  %g = add i32 %base, %tid
  %gi = zext i32 %g to i64
  %pd = getelementptr inbounds <8 x float>, ptr addrspace(1) %d, i64 %gi
  store <8 x float> %acc1, ptr addrspace(1) %pd, align 32
  ret void
}
)";

// Each lane stores to and loads from LDS word (tid * stride) % 4096, `iters` times.
constexpr const char* kLdsStride = R"(
@buf = internal addrspace(3) global [4096 x i32] poison, align 16
define amdgpu_kernel void @B_lds(ptr addrspace(1) noalias %out, i32 %stride, i32 %iters) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %s = mul i32 %tid, %stride
  %slot = and i32 %s, 4095
  %p = getelementptr inbounds [4096 x i32], ptr addrspace(3) @buf, i32 0, i32 %slot
  br label %loop
loop:
  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]
  %acc = phi i32 [ 0, %entry ], [ %acc1, %loop ]
  store volatile i32 %j, ptr addrspace(3) %p, align 4
  %x = load volatile i32, ptr addrspace(3) %p, align 4
  %acc1 = add i32 %acc, %x
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, %iters
  br i1 %done, label %exit, label %loop
exit:
  %base = mul i32 %wg, 64
  %g = add i32 %base, %tid
  %gi = zext i32 %g to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %gi
  store i32 %acc1, ptr addrspace(1) %po, align 4
  ret void
}
)";

LaunchCounters last() { return mockgpu::last_launch_counters(UGRAD_MOCKHIP_LIB); }

// C_copy of `groups` x 256 work-items, `iters` elements each, reading with `stride`.
LaunchCounters copy(uint32_t groups, uint32_t iters, uint32_t stride, uint64_t offset = 0) {
  Mock m;
  auto k = m.load(std::string(kDecls) + kCopy, "C_copy");
  const uint64_t total = uint64_t{groups} * 256, n = total * iters;
  void* a = m.dev->allocate(n * stride * 4 + offset);
  void* out = m.dev->allocate(n * 4);
  m.buffers.push_back(a);
  m.buffers.push_back(out);
  m.run(k, "C_copy", {groups, 1, 1}, {256, 1, 1},
        {reinterpret_cast<uint64_t>(out), reinterpret_cast<uint64_t>(a) + offset},
        {stride, iters, total});
  return last();
}

LaunchCounters lds_loop(uint32_t stride) {
  Mock m;
  auto k = m.load(std::string(kDecls) + kLdsStride, "B_lds");
  uint64_t out = m.upload(std::vector<int32_t>(96 * 64));
  m.run(k, "B_lds", {96, 1, 1}, {64, 1, 1}, {out}, {stride, 128});
  std::vector<int32_t> got = m.download<int32_t>(out, 96 * 64);
  CHECK(got[5] == 127 * 128 / 2);  // sum of 0..127
  return last();
}

}  // namespace

TEST_CASE("counters of a copy: instruction classes, bytes, lines, occupancy, records") {
  Mock m;  // opens libmockhip.so before the records are cleared
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  const LaunchCounters c = copy(16, 1, 1);
  CHECK(mockgpu::launch_records(UGRAD_MOCKHIP_LIB).size() == 1);
  CHECK(std::string(mockgpu::launch_records(UGRAD_MOCKHIP_LIB)[0].kernel) == "C_copy");
  const uint64_t waves = 16 * 8;
  CHECK(c.workgroups == 16);
  CHECK(c.workgroups_emulated == 16);
  CHECK(c.waves_emulated == waves);
  CHECK(c.count(InstClass::VMEM) == 2 * waves);  // one load, one store per wave
  CHECK(c.count(InstClass::VALU) > 0);
  CHECK(c.count(InstClass::SMEM) >= waves);  // kernarg
  CHECK(c.count(InstClass::WAIT) >= waves);
  CHECK(c.count(InstClass::WMMA) == 0);
  CHECK(c.global_bytes_read == 16 * 256 * 4);
  CHECK(c.global_bytes_written == 16 * 256 * 4);
  CHECK(c.vmem_line_requests == 2 * waves);  // 32 lanes x 4 B = one 128 B line
  CHECK(c.vmem_distinct_lines == 2 * waves);
  CHECK(c.vmem_request_bytes == 2 * waves * 128);  // every byte fetched is used
  CHECK(c.vmem_used_line_bytes == 2 * waves * 128);
  CHECK(c.vmem_used_bytes == 2 * 16 * 256 * 4);
  CHECK(c.max_wave_round_trips == 1);
  CHECK(c.vgprs >= 8);
  CHECK(c.vgprs % 8 == 0);
  CHECK(c.sgprs > 0);
  CHECK(mockgpu::waves_per_simd(c) == 16);
  const std::string line = mockgpu::describe_launch("C_copy", c, mockgpu::model_launch(c));
  CHECK(line.find("MODELED") != std::string::npos);
  CHECK(line.find(fmt::format("{}, not measured", mockgpu::model_name())) != std::string::npos);
  CHECK(c.far_round_trips == waves);  // each wave's load line is new
  CHECK(c.cache_accounted);
}

TEST_CASE("DEBUG=2: libmockhip prints each launch's MODELED time on stderr") {
  char path[] = "/tmp/mockgpu_debug_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  {
    ScopedEnv debug("DEBUG", "2");
    std::fflush(stderr);
    const int saved = dup(2);
    dup2(fd, 2);
    copy(4, 1, 1);
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
  }
  close(fd);
  std::ifstream f(path);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(path);
  CHECK(text.find("mockgpu: C_copy MODELED ") != std::string::npos);
  CHECK(text.find(fmt::format("({}, not measured)", mockgpu::model_name())) != std::string::npos);
  CHECK(text.find("% of 960 GB/s peak") != std::string::npos);
}

TEST_CASE("a sampled launch scales to the counters of the whole launch") {
  const LaunchCounters full = copy(64, 1, 1);
  ScopedEnv sample("MOCKGPU_SAMPLE", "8");
  const LaunchCounters part = copy(64, 1, 1);
  CHECK(part.workgroups == 64);
  CHECK(part.workgroups_emulated == 8);
  CHECK(part.scale() == 8.0);
  const ModeledTime a = mockgpu::model_launch(full), b = mockgpu::model_launch(part);
  CHECK(b.dram_bytes == doctest::Approx(a.dram_bytes));
  CHECK(b.useful_bytes == doctest::Approx(a.useful_bytes));
  CHECK(b.seconds == doctest::Approx(a.seconds).epsilon(0.01));
}

namespace {

// The rate a launch's `bytes` moved at in its modeled time (less the launch overhead).
double rate(double bytes, const ModeledTime& t) { return bytes / (t.seconds - t.overhead_s); }

// The check of a calibration fit: the middle of the model lies in the row's measured range.
void within_row(double value, const char* key) {
  const mockgpu::Measurement& m = mockgpu::measurement(key);
  MESSAGE(fmt::format("{}: modeled {:.4g}, row {:.4g}-{:.4g} {}", key, value, m.lo, m.hi, m.unit));
  CHECK(value >= m.lo * 0.999);
  CHECK(value <= m.hi * 1.001);
}

// R_sum over `bytes` of floats twice with the caches cold before the first: both launches.
std::pair<LaunchCounters, LaunchCounters> read_twice(uint64_t bytes, int sample) {
  Mock m;
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  ScopedEnv every("MOCKGPU_SAMPLE", std::to_string(sample));
  auto k = m.load(std::string(kDecls) + read_kernel(), "R_sum");
  const uint32_t groups = 256, total = groups * 256;
  const auto iters = static_cast<uint32_t>(bytes / 64 / total);
  void* a = m.dev->allocate(bytes);
  void* out = m.dev->allocate(total * 16);
  m.buffers.push_back(a);
  m.buffers.push_back(out);
  const std::vector<uint64_t> bufs = {reinterpret_cast<uint64_t>(out),
                                      reinterpret_cast<uint64_t>(a)};
  const uint64_t never = std::bit_cast<uint32_t>(1e30f);
  m.run(k, "R_sum", {groups, 1, 1}, {256, 1, 1}, bufs, {iters, total, never});
  const LaunchCounters first = last();
  m.run(k, "R_sum", {groups, 1, 1}, {256, 1, 1}, bufs, {iters, total, never});
  return {first, last()};
}

}  // namespace

// Calibration: each figure below is a fit, not a prediction. The kernels are the kinds of
// microbenchmark the rows were measured with, and the checks show the model turns their counters
// back into the measured figures (a model that charged, say, a cached re-read as DRAM fails).
TEST_CASE("calibration: stream reads from DRAM, the Infinity Cache and the L2") {
  for (const auto& [mib, key, sample] : {std::tuple{128, "dram_bytes_per_s", 64},
                                         {64, "infinity_bytes_per_s", 32},
                                         {4, "l2_bytes_per_s", 4}}) {
    CAPTURE(mib);
    const double bytes = mib * double(1 << 20);
    const auto [cold, warm] = read_twice(uint64_t(mib) << 20, sample);
    const ModeledTime tc = mockgpu::model_launch(cold), tw = mockgpu::model_launch(warm);
    MESSAGE(mockgpu::describe_launch("R_sum cold", cold, tc));
    MESSAGE(mockgpu::describe_launch("R_sum again", warm, tw));
    CHECK(cold.read_bytes_dram == doctest::Approx(bytes).epsilon(0.01));  // cold: all DRAM
    within_row(rate(bytes, tc), "dram_bytes_per_s");
    const double found = std::string_view(key) == "l2_bytes_per_s" ? warm.read_bytes_l2
                         : std::string_view(key) == "infinity_bytes_per_s"
                             ? warm.read_bytes_infinity
                             : warm.read_bytes_dram;
    CHECK(found == doctest::Approx(bytes).epsilon(0.01));
    within_row(rate(bytes, tw), key);
  }
}

TEST_CASE("cost model: a large copy models at the DRAM rate, reads and writes") {
  Mock m;
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  ScopedEnv sample("MOCKGPU_SAMPLE", "64");
  const LaunchCounters c = copy(16384, 1, 1);  // 16 MiB read, 16 MiB written
  const ModeledTime t = mockgpu::model_launch(c);
  MESSAGE(mockgpu::describe_launch("C_copy", c, t));
  CHECK(std::string(t.bound) == "dram");
  CHECK(t.dram_bytes == doctest::Approx(32.0 * (1 << 20)));
  // Its write-back and its waves' latency overlap the reads partly (the overlap row), so the
  // middle lies a little under the row; the fast corner reaches into it.
  const mockgpu::Measurement& dram = mockgpu::measurement("dram_bytes_per_s");
  const double fast = t.dram_bytes / (t.fast_s - mockgpu::measurement("stream_launch_s").lo);
  MESSAGE(fmt::format("copy: {:.4g} B/s at the fast corner, {:.4g} in the middle", fast,
                      rate(t.dram_bytes, t)));
  CHECK(fast >= dram.lo);
  CHECK(fast <= dram.hi * 1.001);
  CHECK(rate(t.dram_bytes, t) > 0.95 * dram.lo);
  CHECK(t.fast_s < t.seconds);
  CHECK(t.seconds < t.slow_s);
}

TEST_CASE("calibration: a WMMA loop models at the measured WMMA rate") {
  Mock m;
  ScopedEnv sample("MOCKGPU_SAMPLE", "32");
  auto k = m.load(std::string(kDecls) + kWmmaLoop, "W_loop");
  const uint32_t groups = 768, iters = 256;  // 1536 waves
  std::vector<uint16_t> frag(32 * 16, float_to_half(0.5f));
  uint64_t d = m.upload(std::vector<float>(groups * 64 * 8)), a = m.upload(frag),
           b = m.upload(frag);
  m.run(k, "W_loop", {groups, 1, 1}, {64, 1, 1}, {d, a, b}, {iters});
  const LaunchCounters c = last();
  CHECK(c.count(InstClass::WMMA) * static_cast<uint64_t>(c.scale()) == 1536ull * iters);
  const ModeledTime t = mockgpu::model_launch(c);
  MESSAGE(mockgpu::describe_launch("W_loop", c, t));
  CHECK(std::string(t.bound) == "issue");
  within_row(rate(1536.0 * iters * 16 * 16 * 16 * 2, t), "wmma_flops_per_s");
  // One sampled workgroup's result: 16 products of 0.5 * 0.5 per WMMA.
  std::vector<float> got = m.download<float>(d, 8);
  CHECK(got[0] == iters * 16 * 0.25f);
}

TEST_CASE("calibration: pointer chases wait the latency of the level their lines are in") {
  Mock m;
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  auto k = m.load(std::string(kDecls) + kChase, "L_chase");
  const int steps = 64;
  auto reader = m.load(std::string(kDecls) + read_kernel(), "R_sum");
  // Streams 8 MiB through the caches (more than the L2 holds).
  const auto stream = [&] {
    void* big = m.dev->allocate(8 << 20);
    m.buffers.push_back(big);
    const uint32_t groups = 256, total = groups * 256;
    m.run(reader, "R_sum", {groups, 1, 1}, {256, 1, 1},
          {reinterpret_cast<uint64_t>(big), reinterpret_cast<uint64_t>(big)},
          {(8u << 20) / 64 / total, total, std::bit_cast<uint32_t>(1e30f)});
  };
  // The chase over `next`, then again, then again after `stream`.
  const auto chase = [&](const std::vector<int32_t>& next) {
    uint64_t out = m.upload(std::vector<int32_t>(32)), pn = m.upload(next);
    std::vector<LaunchCounters> runs;
    for (int i = 0; i < 3; ++i) {
      if (i == 2) stream();
      m.run(k, "L_chase", {1, 1, 1}, {32, 1, 1}, {out, pn}, {steps});
      runs.push_back(last());
    }
    return runs;
  };
  // Every step a new line (lane l reads l + 32 s): each trip is far; cold from DRAM, then the
  // 8 KiB of lines are in the L2, then (8 MiB read since) in the Infinity Cache only.
  std::vector<int32_t> strided(32 * (steps + 1));
  for (size_t i = 0; i + 32 < strided.size(); ++i) strided[i] = static_cast<int32_t>(i + 32);
  const std::vector<LaunchCounters> runs = chase(strided);
  const LaunchCounters &cold = runs[0], &warm = runs[1], &far = runs[2];
  CHECK(cold.max_wave_round_trips == steps);
  CHECK(cold.far_round_trips == steps);
  const ModeledTime tc = mockgpu::model_launch(cold), tw = mockgpu::model_launch(warm);
  MESSAGE(mockgpu::describe_launch("L_chase cold", cold, tc));
  MESSAGE(mockgpu::describe_launch("L_chase again", warm, tw));
  CHECK(std::string(tc.bound) == "latency");
  within_row(0.99 * (tc.seconds - tc.overhead_s) / steps, "dram_latency_s");
  within_row(0.99 * (tw.seconds - tw.overhead_s) / steps, "l2_latency_s");
  const ModeledTime ti = mockgpu::model_launch(far);
  MESSAGE(mockgpu::describe_launch("L_chase after 8 MiB", far, ti));
  CHECK(far.read_bytes_infinity > 0);
  CHECK(far.read_bytes_l2 == 0);
  within_row(0.99 * (ti.seconds - ti.overhead_s) / steps, "infinity_latency_s");
  // Four workgroups chasing the same lines: each CU fetches them, three of four from the L2.
  {
    mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
    uint64_t out = m.upload(std::vector<int32_t>(32)), pn = m.upload(strided);
    m.run(k, "L_chase", {4, 1, 1}, {32, 1, 1}, {out, pn}, {steps});
    const LaunchCounters shared = last();
    CHECK(shared.vmem_distinct_lines == steps + 1);  // and the store's
    CHECK(shared.vmem_group_read_lines == 4 * steps);
    const ModeledTime ts = mockgpu::model_launch(shared);
    CHECK(shared.read_bytes_dram == steps * 128);
    CHECK(ts.cached_bytes == 3 * steps * 128);
  }
  // One line, re-read: the first trip is far, the other 63 near.
  std::vector<int32_t> ring(32);
  for (int i = 0; i < 32; ++i) ring[i] = (i + 1) % 32;
  const LaunchCounters c = chase(ring)[0];
  CHECK(c.far_round_trips == 1);
  const ModeledTime t = mockgpu::model_launch(c);
  MESSAGE(mockgpu::describe_launch("L_chase one line", c, t));
  within_row(0.99 * (t.seconds - t.overhead_s - 235e-9) / (steps - 1), "near_latency_s");
}

TEST_CASE("calibration: a chain of empty kernels costs the submission path's overhead") {
  Mock m;
  mockgpu::clear_launch_records(UGRAD_MOCKHIP_LIB);
  auto k = m.load(std::string(kDecls) + kEmpty, "E_empty");
  const int n = 64;
  for (int i = 0; i < n; ++i) m.run(k, "E_empty", {1, 1, 1}, {32, 1, 1}, {});
  for (const auto& [path, key] : {std::pair{mockgpu::Submission::Stream, "stream_launch_s"},
                                  {mockgpu::Submission::Graph, "graph_launch_s"}}) {
    mockgpu::CardModel card;
    card.submission = path;
    double sum = 0;
    for (const mockgpu::LaunchRecord& r : mockgpu::launch_records(UGRAD_MOCKHIP_LIB))
      sum += mockgpu::model_launch(r.counters, card).seconds;
    within_row(0.98 * sum / n, key);
  }
}

TEST_CASE("the card's data: sourced rows, every key the model reads, a hash that moves") {
  int sourced = 0;
  for (const mockgpu::Measurement& m : mockgpu::card_measurements()) {
    CAPTURE(m.key);
    CHECK(m.lo <= m.hi);
    CHECK(std::string(m.conditions).size() > 10);
    CHECK(std::string(m.source).size() > 5);
    sourced += m.basis != mockgpu::Basis::Assumption;
  }
  CHECK(sourced >= 12);
  CHECK_THROWS_WITH(mockgpu::measurement("warp_drive"), doctest::Contains("no row 'warp_drive'"));
  const std::string name = mockgpu::model_name();
  CHECK(name.rfind("cost model v3 #", 0) == 0);
  CHECK(name.size() == std::string("cost model v3 #").size() + 4);
  mockgpu::CardModel other;
  other.version = 4;
  CHECK(mockgpu::model_hash(other) != mockgpu::model_hash());
}

TEST_CASE("cost model: loads issued together are one round trip, however they are consumed") {
  Mock m;
  auto k = m.load(std::string(kDecls) + fan_kernel(), "L_fan");
  std::vector<int32_t> a(32 * 16);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int32_t>(i);
  uint64_t out = m.upload(std::vector<int32_t>(32)), pa = m.upload(a);
  m.run(k, "L_fan", {1, 1, 1}, {32, 1, 1}, {out, pa}, {});
  std::vector<int32_t> got = m.download<int32_t>(out, 32);
  CHECK(got[3] == 16 * 3 + 32 * (15 * 16 / 2));
  const LaunchCounters c = last();
  MESSAGE(mockgpu::describe_launch("L_fan", c, mockgpu::model_launch(c)));
  CHECK(c.count(InstClass::VMEM) == 17);  // and the store
  CHECK(c.count(InstClass::WAIT) > 1);    // several waits, one round trip
  CHECK(c.max_wave_round_trips == 1);
}

TEST_CASE("cost model negative control: uncoalesced loads are slow") {
  ScopedEnv sample("MOCKGPU_SAMPLE", "16");
  const LaunchCounters near = copy(1024, 1, 1), far = copy(1024, 1, 32);
  const ModeledTime tn = mockgpu::model_launch(near), tf = mockgpu::model_launch(far);
  MESSAGE(mockgpu::describe_launch("C_copy stride 1", near, tn));
  MESSAGE(mockgpu::describe_launch("C_copy stride 32", far, tf));
  // The load touches 32 lines instead of 1; the store stays coalesced.
  CHECK(far.vmem_line_requests == 33 * far.count(InstClass::VMEM) / 2);
  // Of the 32 lines a load fetches it uses 4 bytes each, and so does the launch.
  CHECK(far.vmem_request_bytes == 256 * far.count(InstClass::VMEM) / 2);
  CHECK(far.vmem_used_line_bytes == far.vmem_request_bytes);
  CHECK(tf.seconds > 5 * tn.seconds);
  CHECK(tf.bandwidth_fraction < 0.1);
}

TEST_CASE("counters: a load straddling lines fetches bytes it does not use, which others use") {
  // Input 64 bytes past a line: each wave's 128-byte load touches two lines and uses half of
  // each; the neighbouring waves use the other halves (but the first and last line's).
  const LaunchCounters c = copy(4, 1, 1, 64);
  const uint64_t loads = c.count(InstClass::VMEM) / 2;
  CHECK(c.vmem_line_requests == 3 * loads);  // two for the load, one for the store
  CHECK(c.vmem_request_bytes == 256 * loads);
  CHECK(c.vmem_used_line_bytes == 384 * loads - 2 * 64 * 1);
}

TEST_CASE("cost model negative control: LDS bank conflicts are slow") {
  const LaunchCounters flat = lds_loop(1), conflicted = lds_loop(64);
  CHECK(flat.lds_conflict_cycles == 0);
  // 64 lanes x 64 words apart: all 32 lanes of a wave in one bank, 31 extra cycles per access.
  CHECK(conflicted.lds_conflict_cycles == 31 * conflicted.count(InstClass::LDS));
  const ModeledTime tf = mockgpu::model_launch(flat), tc = mockgpu::model_launch(conflicted);
  MESSAGE(mockgpu::describe_launch("B_lds stride 1", flat, tf));
  MESSAGE(mockgpu::describe_launch("B_lds stride 64", conflicted, tc));
  CHECK(std::string(tc.bound) == "lds");
  CHECK(tc.seconds - tc.overhead_s > 4 * (tf.seconds - tf.overhead_s));
}

TEST_CASE("cost model negative control: fewer workgroups than CUs are slow") {
  ScopedEnv sample("MOCKGPU_SAMPLE", "4");
  const LaunchCounters wide = copy(1024, 1, 1), narrow = copy(8, 128, 1);
  CHECK(wide.global_bytes_read * wide.scale() == narrow.global_bytes_read * narrow.scale());
  const ModeledTime tw = mockgpu::model_launch(wide), tn = mockgpu::model_launch(narrow);
  MESSAGE(mockgpu::describe_launch("C_copy 1024 workgroups", wide, tw));
  MESSAGE(mockgpu::describe_launch("C_copy 8 workgroups", narrow, tn));
  CHECK(std::string(tn.bound) == "latency");
  CHECK(tn.seconds > 2 * tw.seconds);
}

TEST_CASE("cost model negative control: low occupancy (VGPRs, LDS) is slow") {
  ScopedEnv sample("MOCKGPU_SAMPLE", "64");
  const LaunchCounters c = copy(16384, 1, 1);
  LaunchCounters fat = c, lds = c;
  fat.vgprs = 256;  // 1536 / 264 (granule 24): 5 waves per SIMD
  CHECK(mockgpu::waves_per_simd(fat) == 5);
  lds.lds_bytes = 65536;  // one 8-wave workgroup per CU: 4 waves per SIMD
  CHECK(mockgpu::waves_per_simd(lds) == 4);
  LaunchCounters pair = lds;
  pair.block[0] = 64;  // one 2-wave workgroup per CU: 1 wave per SIMD
  CHECK(mockgpu::waves_per_simd(pair) == 1);
  const ModeledTime t = mockgpu::model_launch(c), tf = mockgpu::model_launch(fat),
                    tl = mockgpu::model_launch(lds);
  MESSAGE(mockgpu::describe_launch("C_copy", c, t));
  MESSAGE(mockgpu::describe_launch("C_copy at 256 VGPRs", fat, tf));
  MESSAGE(mockgpu::describe_launch("C_copy at 64 KiB of LDS", lds, tl));
  // A third or a quarter of the slots: the loads in flight at once cover less of the DRAM
  // latency. The copy writes as much as it reads, so DRAM still bounds it at 4-5 waves per SIMD.
  for (const ModeledTime& low : {tf, tl}) {
    CHECK(low.latency_s > 3 * t.latency_s);
    CHECK(low.seconds > t.seconds);
  }
}

TEST_CASE("cost model: transcendentals and f64 issue slower than the VALU") {
  Mock m;
  constexpr const char* kMath = R"(
declare float @llvm.exp2.f32(float)
define amdgpu_kernel void @T_math(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %d,
    float %x, double %y) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %e = call float @llvm.exp2.f32(float %x)
  %f = fmul double %y, %y
  %g = fadd double %f, %y
  %ti = zext i32 %tid to i64
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %ti
  store float %e, ptr addrspace(1) %po, align 4
  %pd = getelementptr inbounds double, ptr addrspace(1) %d, i64 %ti
  store double %g, ptr addrspace(1) %pd, align 8
  ret void
}
)";
  auto k = m.load(std::string(kDecls) + kMath, "T_math");
  uint64_t out = m.upload(std::vector<float>(32)), d = m.upload(std::vector<double>(32));
  m.run(k, "T_math", {1, 1, 1}, {32, 1, 1}, {out, d},
        {std::bit_cast<uint32_t>(3.0f), std::bit_cast<uint64_t>(2.0)});
  CHECK(m.download<float>(out, 1)[0] == 8.0f);
  CHECK(m.download<double>(d, 1)[0] == 6.0);
  const LaunchCounters c = last();
  CHECK(c.count(InstClass::TRANS) >= 1);   // v_exp_f32
  CHECK(c.count(InstClass::VALU64) >= 2);  // v_mul_f64, v_add_f64
  // By the card's issue costs: one TRANS as four VALU, one VALU64 as sixteen.
  LaunchCounters valu, trans, f64;
  valu.workgroups = trans.workgroups = f64.workgroups = valu.workgroups_emulated =
      trans.workgroups_emulated = f64.workgroups_emulated = 192;
  valu.inst[static_cast<int>(InstClass::VALU)] = 192 * 4096;
  trans.inst[static_cast<int>(InstClass::TRANS)] = 192 * 4096;
  f64.inst[static_cast<int>(InstClass::VALU64)] = 192 * 4096;
  const double v = mockgpu::model_launch(valu).issue_s;
  CHECK(mockgpu::model_launch(trans).issue_s == doctest::Approx(4 * v));
  CHECK(mockgpu::model_launch(f64).issue_s == doctest::Approx(16 * v));
}

TEST_CASE("counters: private memory (spills, scratch arrays) is counted apart and printed") {
  Mock m;
  constexpr const char* kScratch = R"(
define amdgpu_kernel void @S_scratch(ptr addrspace(1) noalias %out, i32 %i) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %buf = alloca [256 x i32], align 4, addrspace(5)
  br label %fill
fill:
  %j = phi i32 [ 0, %entry ], [ %j1, %fill ]
  %pj = getelementptr inbounds [256 x i32], ptr addrspace(5) %buf, i32 0, i32 %j
  %v = add i32 %j, %tid
  store volatile i32 %v, ptr addrspace(5) %pj, align 4
  %j1 = add i32 %j, 1
  %done = icmp eq i32 %j1, 256
  br i1 %done, label %read, label %fill
read:
  %pi = getelementptr inbounds [256 x i32], ptr addrspace(5) %buf, i32 0, i32 %i
  %x = load volatile i32, ptr addrspace(5) %pi, align 4
  %ti = zext i32 %tid to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %ti
  store i32 %x, ptr addrspace(1) %po, align 4
  ret void
}
)";
  auto k = m.load(std::string(kDecls) + kScratch, "S_scratch");
  uint64_t out = m.upload(std::vector<int32_t>(32));
  m.run(k, "S_scratch", {1, 1, 1}, {32, 1, 1}, {out}, {7});
  CHECK(m.download<int32_t>(out, 32)[5] == 12);
  const LaunchCounters c = last();
  CHECK(c.scratch_bytes_written == 256 * 32 * 4);
  CHECK(c.scratch_bytes_read == 32 * 4);
  CHECK(c.global_bytes_written == 32 * 4);  // scratch is not global traffic
  const std::string line = mockgpu::describe_launch("S_scratch", c, mockgpu::model_launch(c));
  MESSAGE(line);
  CHECK(line.find("spills: 32768 B stored, 128 B reloaded") != std::string::npos);
}
