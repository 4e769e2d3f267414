// Whole kernels through ugrad's real AMD runtime path: LLVM IR -> amd_compile (gfx1100 code
// object) -> HipDevice (dlopen of HIP_LIB = libmockhip.so) -> the emulator, checked against C++
// references computed here.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "base/env.h"
#include "base/error.h"
#include "base/float16.h"
#include "runtime/llvm_target.h"
#include "test/mockgpu/mock_kernels.h"
#include "test/runtime/test_llvm_kernels.h"

using namespace ugrad;
namespace tk = ugrad::test_kernels;

namespace {

using test::Mock;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("libmockhip reports one gfx1100 device through ugrad's HIP loader") {
  Mock m;
  CHECK(m.dev->info().gcn_arch_name == "gfx1100");
  CHECK(m.dev->info().warp_size == 32);
  CHECK(m.dev->info().name.find("mockgpu") != std::string::npos);
  auto s = m.dev->create_stream();
  auto e0 = m.dev->create_event(), e1 = m.dev->create_event();
  e0->record(s.get());
  std::vector<int> host = {1, 2, 3}, back(3);
  uint64_t p = m.upload(std::vector<int>(3));
  m.dev->copy_to_device_async(reinterpret_cast<void*>(p), host.data(), 12, *s);
  m.dev->copy_to_host_async(back.data(), reinterpret_cast<void*>(p), 12, *s);
  e1->record(s.get());
  s->synchronize();
  e1->synchronize();
  CHECK(back == host);
  CHECK(HipEvent::elapsed_ms(*e0, *e1) >= 0.0f);
}

TEST_CASE("elementwise add, scalar args and mixed kernarg layouts match the CPU") {
  Mock m;
  const int n = 5000;  // not a multiple of the 1024 elements a workgroup covers
  std::vector<float> a = random_floats(n, 1), b = random_floats(n, 2);
  auto add = m.load(tk::kAmdAdd, "E_add");
  uint64_t out = m.upload(std::vector<float>(n)), pa = m.upload(a), pb = m.upload(b);
  m.run(add, "E_add", {(n + 1023) / 1024, 1, 1}, {256, 1, 1}, {out, pa, pb}, {n});
  std::vector<float> got = m.download<float>(out, n);
  for (int i = 0; i < n; ++i) REQUIRE(got[i] == a[i] + b[i]);

  auto scale = m.load(tk::kAmdScale, "E_scale");
  uint64_t out2 = m.upload(std::vector<float>(n));
  m.run(scale, "E_scale", {(n + 255) / 256, 1, 1}, {256, 1, 1}, {out2, pa},
        {static_cast<uint64_t>(static_cast<uint32_t>(-3)), n});
  got = m.download<float>(out2, n);
  for (int i = 0; i < n; ++i) REQUIRE(got[i] == a[i] * -3.0f);

  auto mixed = m.load(tk::kAmdMixed, "E_mixed");
  uint64_t out3 = m.upload(std::vector<float>(64));
  m.run(mixed, "E_mixed", {1, 1, 1}, {64, 1, 1}, {out3},
        {7, static_cast<uint64_t>(-(int64_t{1} << 40)), std::bit_cast<uint32_t>(0.5f)});
  got = m.download<float>(out3, 64);
  const float want = (7.0f + static_cast<float>(-(int64_t{1} << 40))) + 0.5f;
  for (float g : got) CHECK(g == want);
}

TEST_CASE("per-work-item reduction and an LDS reverse across 8 waves with a barrier") {
  Mock m;
  const int groups = 3, n = groups * 256 * 16;
  std::vector<float> a = random_floats(n, 3);
  auto sum = m.load(tk::kAmdSum, "R_sum");
  uint64_t out = m.upload(std::vector<float>(groups * 256)), pa = m.upload(a);
  m.run(sum, "R_sum", {groups, 1, 1}, {256, 1, 1}, {out, pa});
  std::vector<float> got = m.download<float>(out, groups * 256);
  for (int g = 0; g < groups * 256; ++g) {
    double want = 0;
    for (int j = 0; j < 16; ++j) want += a[16 * g + j];
    REQUIRE(std::fabs(got[g] - want) <= 1e-5 * 64);
  }
  auto lds = m.load(tk::kAmdLds, "L_reverse");
  CHECK(lds.bin.info.kernel("L_reverse").group_segment_size == 1024);
  uint64_t out2 = m.upload(std::vector<float>(groups * 256));
  m.run(lds, "L_reverse", {groups, 1, 1}, {256, 1, 1}, {out2, pa});
  got = m.download<float>(out2, groups * 256);
  for (int g = 0; g < groups; ++g)
    for (int t = 0; t < 256; ++t) REQUIRE(got[g * 256 + t] == a[g * 256 + 255 - t]);
}

TEST_CASE("WMMA f16 16x16x16 and sdot4 kernels match C++ references") {
  Mock m;
  // A, B, C as the gfx11 wave32 fragments: lane l holds row (A) / column (B) l % 16; C/D VGPR i
  // of lane l is element [2i + l/16][l % 16].
  float A[16][16], B[16][16], C[16][16];
  std::mt19937 rng(4);
  std::uniform_int_distribution<int> d(-8, 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      A[i][j] = static_cast<float>(d(rng)) * 0.25f;
      B[i][j] = static_cast<float>(d(rng)) * 0.5f;
      C[i][j] = static_cast<float>(d(rng));
    }
  std::vector<uint16_t> fa(32 * 16), fb(32 * 16);  // f16 bits
  std::vector<float> fc(32 * 8);
  for (int l = 0; l < 32; ++l) {
    for (int k = 0; k < 16; ++k) {
      fa[l * 16 + k] = float_to_half(static_cast<float>(A[l % 16][k]));
      fb[l * 16 + k] = float_to_half(static_cast<float>(B[k][l % 16]));
    }
    for (int i = 0; i < 8; ++i) fc[l * 8 + i] = C[2 * i + l / 16][l % 16];
  }
  auto wmma = m.load(tk::kAmdWmma, "W_wmma");
  uint64_t pd = m.upload(std::vector<float>(32 * 8)), pa = m.upload(fa), pb = m.upload(fb),
           pc = m.upload(fc);
  m.run(wmma, "W_wmma", {1, 1, 1}, {32, 1, 1}, {pd, pa, pb, pc});
  std::vector<float> got = m.download<float>(pd, 32 * 8);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 8; ++i) {
      const int r = 2 * i + l / 16, c = l % 16;
      float want = C[r][c];
      for (int k = 0; k < 16; ++k) want += A[r][k] * B[k][c];
      REQUIRE(got[l * 8 + i] == want);  // small multiples of 1/8: exact
    }

  const int n = 512;
  std::vector<int32_t> va(n), vb(n), vc(n);
  std::uniform_int_distribution<int32_t> w(INT32_MIN, INT32_MAX);
  for (int i = 0; i < n; ++i) va[i] = w(rng), vb[i] = w(rng), vc[i] = w(rng) / 4;
  auto dot = m.load(tk::kAmdDot, "D_sdot4");
  uint64_t po = m.upload(std::vector<int32_t>(n)), qa = m.upload(va), qb = m.upload(vb),
           qc = m.upload(vc);
  m.run(dot, "D_sdot4", {n / 256, 1, 1}, {256, 1, 1}, {po, qa, qb, qc});
  std::vector<int32_t> r = m.download<int32_t>(po, n);
  for (int i = 0; i < n; ++i) {
    int64_t want = vc[i];
    for (int k = 0; k < 4; ++k)
      want +=
          int64_t{static_cast<int8_t>(va[i] >> (8 * k))} * static_cast<int8_t>(vb[i] >> (8 * k));
    REQUIRE(r[i] == static_cast<int32_t>(want));
  }
}

TEST_CASE("a stray global access fails the launch naming kernel, pc, lane and address") {
  Mock m;
  auto add = m.load(tk::kAmdAdd, "E_add");
  std::vector<float> small(100, 1.0f);
  uint64_t out = m.upload(small), pa = m.upload(small), pb = m.upload(small);
  CHECK_THROWS_WITH_AS(m.run(add, "E_add", {1, 1, 1}, {256, 1, 1}, {out, pa, pb}, {1024}),
                       doctest::Contains("mockgpu: kernel E_add pc 0x"), Error);
  try {
    m.run(add, "E_add", {1, 1, 1}, {256, 1, 1}, {out, pa, pb}, {1024});
  } catch (const Error& e) {
    std::string what = e.what();
    CHECK(what.find("hipErrorLaunchFailure") != std::string::npos);
    CHECK(what.find("out-of-bounds access: lane") != std::string::npos);
  }
}

TEST_CASE("launch ABI: 3D workitem/workgroup ids, the dispatch packet and hidden args") {
  Mock m;
  // out[flat] = {tid.x, tid.y, tid.z, wg.x, wg.y, wg.z, packet wg size x, packet grid size y}
  const std::string ir = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workitem.id.y()
declare i32 @llvm.amdgcn.workitem.id.z()
declare i32 @llvm.amdgcn.workgroup.id.x()
declare i32 @llvm.amdgcn.workgroup.id.y()
declare i32 @llvm.amdgcn.workgroup.id.z()
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
define amdgpu_kernel void @ids(ptr addrspace(1) noalias %out) #0 {
  %tx = call i32 @llvm.amdgcn.workitem.id.x()
  %ty = call i32 @llvm.amdgcn.workitem.id.y()
  %tz = call i32 @llvm.amdgcn.workitem.id.z()
  %gx = call i32 @llvm.amdgcn.workgroup.id.x()
  %gy = call i32 @llvm.amdgcn.workgroup.id.y()
  %gz = call i32 @llvm.amdgcn.workgroup.id.z()
  %dp = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %pws = getelementptr inbounds i8, ptr addrspace(4) %dp, i64 4
  %ws16 = load i16, ptr addrspace(4) %pws
  %ws = zext i16 %ws16 to i32
  %pgy = getelementptr inbounds i8, ptr addrspace(4) %dp, i64 16
  %gsy = load i32, ptr addrspace(4) %pgy
  ; flat = ((gz*2 + gy)*3 + gx) * 32 + (tz*4 + ty)*4 + tx   (block 4x4x2, grid 3x2x2)
  %a0 = mul i32 %gz, 2
  %a1 = add i32 %a0, %gy
  %a2 = mul i32 %a1, 3
  %a3 = add i32 %a2, %gx
  %a4 = mul i32 %a3, 32
  %b0 = mul i32 %tz, 4
  %b1 = add i32 %b0, %ty
  %b2 = mul i32 %b1, 4
  %b3 = add i32 %b2, %tx
  %flat = add i32 %a4, %b3
  %base = mul i32 %flat, 8
  %v = insertelement <8 x i32> poison, i32 %tx, i32 0
  %v1 = insertelement <8 x i32> %v, i32 %ty, i32 1
  %v2 = insertelement <8 x i32> %v1, i32 %tz, i32 2
  %v3 = insertelement <8 x i32> %v2, i32 %gx, i32 3
  %v4 = insertelement <8 x i32> %v3, i32 %gy, i32 4
  %v5 = insertelement <8 x i32> %v4, i32 %gz, i32 5
  %v6 = insertelement <8 x i32> %v5, i32 %ws, i32 6
  %v7 = insertelement <8 x i32> %v6, i32 %gsy, i32 7
  %i = zext i32 %base to i64
  %p = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %i
  store <8 x i32> %v7, ptr addrspace(1) %p, align 4
  ret void
}
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";
  auto k = m.load(ir, "ids");
  const int items = 3 * 2 * 2 * 32;
  uint64_t out = m.upload(std::vector<int32_t>(items * 8, -1));
  m.run(k, "ids", {3, 2, 2}, {4, 4, 2}, {out});
  std::vector<int32_t> got = m.download<int32_t>(out, items * 8);
  for (int gz = 0; gz < 2; ++gz)
    for (int gy = 0; gy < 2; ++gy)
      for (int gx = 0; gx < 3; ++gx)
        for (int tz = 0; tz < 2; ++tz)
          for (int ty = 0; ty < 4; ++ty)
            for (int tx = 0; tx < 4; ++tx) {
              const int flat = ((gz * 2 + gy) * 3 + gx) * 32 + (tz * 4 + ty) * 4 + tx;
              const int32_t* r = &got[flat * 8];
              INFO("group ", gx, ",", gy, ",", gz, " item ", tx, ",", ty, ",", tz);
              CHECK(std::vector<int32_t>(r, r + 8) ==
                    std::vector<int32_t>{tx, ty, tz, gx, gy, gz, 4, 2 * 4});
            }
}

TEST_CASE("private arrays spill to scratch and are per lane") {
  Mock m;
  // A dynamically indexed private array: out[g] = sum_j arr[(j * 7 + g) % 16] with arr[j] = g + j.
  const std::string ir = R"(
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @priv(ptr addrspace(1) noalias %out) #0 {
entry:
  %arr = alloca [16 x i32], align 4, addrspace(5)
  %g = call i32 @llvm.amdgcn.workitem.id.x()
  br label %fill
fill:
  %j = phi i32 [ 0, %entry ], [ %j1, %fill ]
  %v = add i32 %g, %j
  %p = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 %j
  store volatile i32 %v, ptr addrspace(5) %p
  %j1 = add i32 %j, 1
  %d = icmp eq i32 %j1, 16
  br i1 %d, label %sum, label %fill
sum:
  %k = phi i32 [ 0, %fill ], [ %k1, %sum ]
  %acc = phi i32 [ 0, %fill ], [ %acc1, %sum ]
  %t = mul i32 %k, 7
  %t1 = add i32 %t, %g
  %idx = and i32 %t1, 15
  %q = getelementptr inbounds [16 x i32], ptr addrspace(5) %arr, i32 0, i32 %idx
  %x = load volatile i32, ptr addrspace(5) %q
  %acc1 = add i32 %acc, %x
  %k1 = add i32 %k, 1
  %e = icmp eq i32 %k1, 16
  br i1 %e, label %exit, label %sum
exit:
  %gi = zext i32 %g to i64
  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %gi
  store i32 %acc1, ptr addrspace(1) %po
  ret void
}
attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
)";
  auto k = m.load(ir, "priv");
  CHECK(k.bin.info.kernel("priv").private_segment_size >= 64);
  uint64_t out = m.upload(std::vector<int32_t>(64));
  m.run(k, "priv", {1, 1, 1}, {64, 1, 1}, {out});
  std::vector<int32_t> got = m.download<int32_t>(out, 64);
  for (int g = 0; g < 64; ++g) {
    int want = 0;
    for (int j = 0; j < 16; ++j) want += g + ((j * 7 + g) % 16);
    REQUIRE(got[g] == want);
  }
}
