// The emulator shows bugs a real card shows: uninitialised device memory and LDS read as a NaN
// poison pattern, and waves and workgroups run in a seeded shuffled order, so a missing barrier
// gives a wrong answer. Each case has its control (knob off, or the barrier in place).
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "test/mockgpu/launch.h"
#include "test/mockgpu/mock_kernels.h"
#include "test/runtime/test_llvm_kernels.h"

using namespace ugrad;
using test::Mock;
using test::ScopedEnv;

namespace {

constexpr const char* kDecls = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare void @llvm.amdgcn.s.barrier()
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";

// out[tid] = tile[tid] as bits, where only lane 0 stored (tile[0] = 7) before the barrier.
constexpr const char* kReadLds = R"(
@tile = internal addrspace(3) global [64 x i32] poison, align 16
define amdgpu_kernel void @P_lds(ptr addrspace(1) noalias %out) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %put, label %sync
put:
  store i32 7, ptr addrspace(3) @tile, align 4
  br label %sync
sync:
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %p = getelementptr inbounds [64 x i32], ptr addrspace(3) @tile, i32 0, i32 %tid
  %v = load i32, ptr addrspace(3) %p, align 4
  %ti = zext i32 %tid to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %ti
  store i32 %v, ptr addrspace(1) %po, align 4
  ret void
}
)";

// out[g] = a[g - 32] within a workgroup of 256 (wave w reads what wave w-1 stored in LDS; wave 0
// reads its own). BARRIER is replaced by a barrier, or by nothing: in order (wave w-1 before
// wave w) the answer is right even without it, which is what the shuffle exposes.
constexpr const char* kShift = R"(
@tile = internal addrspace(3) global [256 x float] poison, align 16
define amdgpu_kernel void @S_shift(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %a) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  %gi = zext i32 %g to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %gi
  %v = load float, ptr addrspace(1) %pa, align 4
  %pl = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float %v, ptr addrspace(3) %pl, align 4
  BARRIER
  %low = icmp ult i32 %tid, 32
  %back = sub i32 %tid, 32
  %r = select i1 %low, i32 %tid, i32 %back
  %pr = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i32 0, i32 %r
  %w = load float, ptr addrspace(3) %pr, align 4
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %gi
  store float %w, ptr addrspace(1) %po, align 4
  ret void
}
)";

// Each wave's first lane takes a ticket: out[wg * waves + wave] = atomic counter++.
constexpr const char* kTickets = R"(
define amdgpu_kernel void @T_order(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %counter) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %lane = and i32 %tid, 31
  %leader = icmp eq i32 %lane, 0
  br i1 %leader, label %take, label %exit
take:
  %t = atomicrmw add ptr addrspace(1) %counter, i32 1 monotonic, align 4
  %wave = lshr i32 %tid, 5
  %w4 = mul i32 %wg, 4
  %slot = add i32 %w4, %wave
  %si = zext i32 %slot to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %si
  store i32 %t, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}
)";

std::string with_barrier(bool barrier) {
  std::string ir = std::string(kDecls) + kShift;
  const std::string sync = barrier ? "fence syncscope(\"workgroup\") release\n"
                                     "  call void @llvm.amdgcn.s.barrier()\n"
                                     "  fence syncscope(\"workgroup\") acquire"
                                   : "";
  ir.replace(ir.find("BARRIER"), 7, sync);
  return ir;
}

// Runs S_shift (with or without its barrier) on 2 workgroups; returns how many outputs are wrong.
int shift_errors(bool barrier) {
  Mock m;
  const int n = 512;
  std::vector<float> a(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i);
  auto k = m.load(with_barrier(barrier), "S_shift");
  uint64_t out = m.upload(std::vector<float>(n)), pa = m.upload(a);
  m.run(k, "S_shift", {2, 1, 1}, {256, 1, 1}, {out, pa});
  std::vector<float> got = m.download<float>(out, n);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    const int t = i % 256;
    wrong += got[i] != a[t < 32 ? i : i - 32];
  }
  return wrong;
}

// The ticket each of the 8 x 4 waves of T_order took.
std::vector<int32_t> wave_order() {
  Mock m;
  auto k = m.load(std::string(kDecls) + kTickets, "T_order");
  uint64_t out = m.upload(std::vector<int32_t>(32, -1)),
           counter = m.upload(std::vector<int32_t>(1));
  m.run(k, "T_order", {8, 1, 1}, {128, 1, 1}, {out, counter});
  return m.download<int32_t>(out, 32);
}

}  // namespace

TEST_CASE("fresh device memory holds the NaN poison pattern, zeros with MOCKGPU_POISON=0") {
  static_assert(mockgpu::kPoisonWord == 0x7FFF7FFFu);
  CHECK(std::isnan(std::bit_cast<float>(mockgpu::kPoisonWord)));
  CHECK(std::isnan(
      std::bit_cast<double>(uint64_t{mockgpu::kPoisonWord} << 32 | mockgpu::kPoisonWord)));
  CHECK((mockgpu::kPoisonWord & 0x7c00) == 0x7c00);  // f16 exponent all ones, mantissa != 0
  for (const char* poison : {"1", "0"}) {
    ScopedEnv env("MOCKGPU_POISON", poison);
    Mock m;
    void* p = m.dev->allocate(64);
    m.buffers.push_back(p);
    std::vector<uint32_t> words(16);
    m.dev->copy_to_host(words.data(), p, 64);
    for (uint32_t w : words) CHECK(w == (poison[0] == '1' ? mockgpu::kPoisonWord : 0u));
    // A kernel reading it: E_add of two fresh buffers.
    auto add = m.load(test_kernels::kAmdAdd, "E_add");
    void* a = m.dev->allocate(1024 * 4);
    m.buffers.push_back(a);
    uint64_t out = m.upload(std::vector<float>(1024, 1.0f));
    const uint64_t pa = reinterpret_cast<uint64_t>(a);
    m.run(add, "E_add", {1, 1, 1}, {256, 1, 1}, {out, pa, pa}, {1024});
    std::vector<float> got = m.download<float>(out, 1024);
    const bool poisoned = poison[0] == '1';
    for (float g : got) REQUIRE((poisoned ? std::isnan(g) : g == 0.0f));
  }
}

TEST_CASE("uninitialised LDS reads as the poison pattern") {
  for (const char* poison : {"1", "0"}) {
    ScopedEnv env("MOCKGPU_POISON", poison);
    Mock m;
    auto k = m.load(std::string(kDecls) + kReadLds, "P_lds");
    uint64_t out = m.upload(std::vector<uint32_t>(64, 1));
    m.run(k, "P_lds", {1, 1, 1}, {64, 1, 1}, {out});
    std::vector<uint32_t> got = m.download<uint32_t>(out, 64);
    CHECK(got[0] == 7);
    for (int i = 1; i < 64; ++i) REQUIRE(got[i] == (poison[0] == '1' ? mockgpu::kPoisonWord : 0u));
  }
}

TEST_CASE("a missing barrier gives a wrong answer under the shuffle, the barrier a right one") {
  {
    ScopedEnv in_order("MOCKGPU_SEED", "0");
    CHECK(shift_errors(false) == 0);  // round-robin in order hides the bug
  }
  CHECK(shift_errors(false) > 0);  // the default seed shuffles the waves
  CHECK(shift_errors(true) == 0);
  ScopedEnv other("MOCKGPU_SEED", "12345");
  CHECK(shift_errors(false) > 0);
  CHECK(shift_errors(true) == 0);
}

TEST_CASE("the shuffled wave and workgroup order is deterministic for one seed") {
  std::vector<int32_t> identity(32);
  for (int i = 0; i < 32; ++i) identity[i] = i;
  std::vector<int32_t> first, again, other;
  {
    ScopedEnv seed("MOCKGPU_SEED", "0");
    CHECK(wave_order() == identity);
  }
  {
    ScopedEnv seed("MOCKGPU_SEED", "7");
    first = wave_order();
    again = wave_order();
  }
  {
    ScopedEnv seed("MOCKGPU_SEED", "8");
    other = wave_order();
  }
  CHECK(first == again);
  CHECK(first != identity);
  CHECK(first != other);
  std::vector<int32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == identity);  // every wave took exactly one ticket
}
