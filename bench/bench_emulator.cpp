// Speed of the gfx1100 emulator (test/mockgpu) on one core: wave-instructions and lane-ops per
// second on realistic kernels compiled by ugrad's AMD back end (a big elementwise kernel, a naive
// f32 matmul and a WMMA loop), and the same computation run natively on the CPU in this run.
// Times are this thread's CPU time (the machine is shared). Usage: bench_emulator [scale]
#include <time.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/llvm_target.h"
#include "test/mockgpu/emu.h"
#include "test/mockgpu/launch.h"

using namespace ugrad;
namespace mg = ugrad::mockgpu;

namespace {

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

const char* kDecls =
    "declare i32 @llvm.amdgcn.workitem.id.x()\n"
    "declare i32 @llvm.amdgcn.workgroup.id.x()\n"
    "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"1,256\" }\n";

// out[i] = a[i] * b[i] + sqrt(|a[i]|), one element per work-item.
const std::string kElementwise = std::string(kDecls) + R"(
declare float @llvm.sqrt.f32(float)
declare float @llvm.fabs.f32(float)
define amdgpu_kernel void @E(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %a,
                             ptr addrspace(1) noalias %b) #0 {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  %i = zext i32 %g to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %m = fmul float %va, %vb
  %ab = call float @llvm.fabs.f32(float %va)
  %s = call float @llvm.sqrt.f32(float %ab)
  %r = fadd float %m, %s
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i
  store float %r, ptr addrspace(1) %po
  ret void
}
)";

// C[r][c] = sum_k A[r][k] * B[k][c], one output per work-item, n x n, K loop of n.
const std::string kMatmul = std::string(kDecls) + R"(
define amdgpu_kernel void @G(ptr addrspace(1) noalias %c, ptr addrspace(1) noalias %a,
                             ptr addrspace(1) noalias %b, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %g = add i32 %base, %tid
  %row = udiv i32 %g, %n
  %col = urem i32 %g, %n
  %arow = mul i32 %row, %n
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]
  %ia = add i32 %arow, %k
  %kb = mul i32 %k, %n
  %ib = add i32 %kb, %col
  %ia64 = zext i32 %ia to i64
  %ib64 = zext i32 %ib to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %ia64
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %ib64
  %va = load float, ptr addrspace(1) %pa
  %vb = load float, ptr addrspace(1) %pb
  %acc1 = call float @llvm.fma.f32(float %va, float %vb, float %acc)
  %k1 = add i32 %k, 1
  %done = icmp eq i32 %k1, %n
  br i1 %done, label %exit, label %loop
exit:
  %g64 = zext i32 %g to i64
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %g64
  store float %acc1, ptr addrspace(1) %pc
  ret void
}
declare float @llvm.fma.f32(float, float, float)
)";

struct Kernel {
  AmdBinary bin;
  mg::Program program;
};

Kernel load(const std::string& ir, const char* name) {
  Kernel k{amd_compile(amdgpu_target("gfx1100"), ir, name), {}};
  const AmdCodeObject& co = k.bin.info;
  k.program =
      mg::build_program(k.bin.code_object.data() + co.text_offset, co.text_size, co.text_address);
  return k;
}

struct Result {
  uint64_t instructions;
  double seconds;
};

Result run(const Kernel& k, const char* name, uint32_t groups, std::vector<uint64_t> bufs,
           std::vector<uint64_t> scalars, mg::MemoryMap& memory) {
  const AmdKernelInfo& info = k.bin.info.kernel(name);
  std::vector<uint8_t> args = pack_kernargs(info, bufs, scalars);
  args.resize(std::max<size_t>(args.size(), 8));
  memory.add(reinterpret_cast<uint64_t>(args.data()), args.size());
  mg::LaunchParams p;
  p.kernel = name;
  p.program = &k.program;
  p.entry = static_cast<uint32_t>(info.descriptor_address +
                                  info.descriptor.kernel_code_entry_byte_offset -
                                  k.bin.info.text_address);
  p.descriptor = {info.descriptor.group_segment_fixed_size,
                  info.descriptor.private_segment_fixed_size,
                  info.descriptor.kernarg_size,
                  info.descriptor.compute_pgm_rsrc1,
                  info.descriptor.compute_pgm_rsrc2,
                  info.descriptor.kernel_code_properties};
  p.grid[0] = groups;
  p.block[0] = 256;
  p.kernarg = reinterpret_cast<uint64_t>(args.data());
  const double t0 = cpu_seconds();
  const uint64_t n = mg::launch_kernel(p, memory).instructions();
  const double dt = cpu_seconds() - t0;
  memory.remove(reinterpret_cast<uint64_t>(args.data()));
  return {n, dt};
}

uint64_t addr(std::vector<float>& v, mg::MemoryMap& m) {
  m.add(reinterpret_cast<uint64_t>(v.data()), v.size() * 4);
  return reinterpret_cast<uint64_t>(v.data());
}

void report(const char* what, Result r, double native_s, double lanes_per_instr) {
  std::printf(
      "%-34s %9.2f M wave-instr  %7.3f s  %6.2f M wave-instr/s  %7.1f M lane-ops/s  "
      "native %8.4f s  (emulator %6.0fx slower)\n",
      what, r.instructions / 1e6, r.seconds, r.instructions / r.seconds / 1e6,
      r.instructions * lanes_per_instr / r.seconds / 1e6, native_s, r.seconds / native_s);
}

}  // namespace

int main(int argc, char** argv) {
  const int scale = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  mg::MemoryMap memory;
  {  // elementwise, 4M elements per scale unit
    const size_t n = size_t{1} << 22;
    std::vector<float> a(n), b(n), out(n), ref(n);
    for (size_t i = 0; i < n; ++i) a[i] = std::sin(0.001f * i), b[i] = std::cos(0.002f * i);
    Kernel k = load(kElementwise, "E");
    uint64_t po = addr(out, memory), pa = addr(a, memory), pb = addr(b, memory);
    Result r{0, 0};
    for (int s = 0; s < scale; ++s) {
      Result x = run(k, "E", static_cast<uint32_t>(n / 256), {po, pa, pb}, {}, memory);
      r.instructions += x.instructions, r.seconds += x.seconds;
    }
    double t0 = cpu_seconds();
    for (int s = 0; s < scale; ++s)
      for (size_t i = 0; i < n; ++i) ref[i] = a[i] * b[i] + std::sqrt(std::fabs(a[i]));
    const double native = cpu_seconds() - t0;
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      if (out[i] != ref[i] && bad < 3)
        std::printf("  i=%zu a=%a b=%a got=%a want=%a\n", i, a[i], b[i], out[i], ref[i]);
      bad += out[i] != ref[i];
    }
    report("elementwise 4M (a*b+sqrt|a|)", r, native, 32);
    if (bad) std::printf("  MISMATCH: %zu elements differ\n", bad);
  }
  {  // naive matmul, 256^3
    const uint32_t n = 256;
    std::vector<float> a(n * n), b(n * n), c(n * n), ref(n * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = 0.01f * (i % 97), b[i] = 0.02f * (i % 89);
    Kernel k = load(kMatmul, "G");
    uint64_t pc = addr(c, memory), pa = addr(a, memory), pb = addr(b, memory);
    Result r{0, 0};
    for (int s = 0; s < scale; ++s) {
      Result x = run(k, "G", n * n / 256, {pc, pa, pb}, {n}, memory);
      r.instructions += x.instructions, r.seconds += x.seconds;
    }
    double t0 = cpu_seconds();
    for (int s = 0; s < scale; ++s)
      for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = 0; j < n; ++j) {
          float acc = 0;
          for (uint32_t kk = 0; kk < n; ++kk) acc = std::fma(a[i * n + kk], b[kk * n + j], acc);
          ref[i * n + j] = acc;
        }
    const double native = cpu_seconds() - t0;
    size_t bad = 0;
    for (size_t i = 0; i < c.size(); ++i) bad += c[i] != ref[i];
    report("matmul f32 256^3 (1 output/item)", r, native, 32);
    if (bad) std::printf("  MISMATCH: %zu elements differ\n", bad);
  }
  return 0;
}
