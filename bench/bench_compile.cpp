// Per-kernel compile latency of the LLVM back ends, split by phase, over ~30 generated kernels of
// varied shape (elementwise chains of 1..4 inputs, with transcendental ops, some reductions):
//   CPU:     IR parse + O2 + x86 codegen + ORC JIT load (link happens at the first symbol lookup)
//   gfx1100: IR parse + O2 + AMDGPU codegen + in-process lld link + metadata parse
// The first kernel (cold caches, target init) is reported separately and excluded from the means.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "runtime/amd/amd_compile.h"
#include "runtime/cpu_jit.h"
#include "runtime/llvm_compile.h"

using namespace ugrad;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Shape {
  int inputs;      // 1..4 input buffers
  int ops;         // length of the op chain
  bool reduce;     // sum instead of elementwise store
  bool transcend;  // sprinkle exp2/sqrt/log2
};

// One kernel body: loads x0..x{inputs-1} at index %i (i64), computes a chain, leaves %v<last>.
std::string body(const Shape& s, const char* as) {
  static const char* kBin[] = {"fadd", "fmul", "fsub", "fadd", "fmul"};
  static const char* kUn[] = {"llvm.exp2.f32", "llvm.sqrt.f32", "llvm.log2.f32"};
  std::string b;
  for (int k = 0; k < s.inputs; ++k)
    b += "  %p" + std::to_string(k) + " = getelementptr inbounds float, ptr" + as + " %in" +
         std::to_string(k) + ", i64 %i\n  %x" + std::to_string(k) + " = load float, ptr" + as +
         " %p" + std::to_string(k) + ", align 4\n";
  b += "  %v0 = fadd float %x0, 1.0\n";
  for (int o = 1; o <= s.ops; ++o) {
    std::string prev = "%v" + std::to_string(o - 1), cur = "%v" + std::to_string(o);
    if (s.transcend && o % 3 == 0)
      b += "  " + cur + " = call float @" + kUn[o % 3 == 0 ? (o / 3) % 3 : 0] + "(float " + prev +
           ")\n";
    else
      b += "  " + cur + " = " + kBin[o % 5] + " contract float " + prev + ", %x" +
           std::to_string(o % s.inputs) + "\n";
  }
  return b;
}

std::string decls() {
  return "declare float @llvm.exp2.f32(float)\ndeclare float @llvm.sqrt.f32(float)\n"
         "declare float @llvm.log2.f32(float)\n";
}

std::string params(const Shape& s, const char* as) {
  std::string p = "ptr" + std::string(as) + " noalias %out";
  for (int k = 0; k < s.inputs; ++k)
    p += ", ptr" + std::string(as) + " noalias %in" + std::to_string(k);
  return p;
}

std::string cpu_ir(const Shape& s, const std::string& name) {
  std::string last = "%v" + std::to_string(s.ops);
  std::string ir = decls() + "define void @" + name + "(" + params(s, "") +
                   ", i64 %n) {\nentry:\n" +
                   "  %e = icmp sle i64 %n, 0\n  br i1 %e, label %exit, label %loop\nloop:\n"
                   "  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]\n";
  if (s.reduce) ir += "  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]\n";
  ir += body(s, "");
  if (s.reduce) {
    ir += "  %acc1 = fadd reassoc nsz float %acc, " + last + "\n";
  } else {
    ir += "  %po = getelementptr inbounds float, ptr %out, i64 %i\n  store float " + last +
          ", ptr %po, align 4\n";
  }
  ir +=
      "  %i1 = add nuw nsw i64 %i, 1\n  %d = icmp eq i64 %i1, %n\n"
      "  br i1 %d, label %exit, label %loop\nexit:\n";
  if (s.reduce)
    ir += "  %r = phi float [ 0.0, %entry ], [ %acc1, %loop ]\n  store float %r, ptr %out\n";
  return ir + "  ret void\n}\n";
}

std::string amd_ir(const Shape& s, const std::string& name) {
  const char* as = " addrspace(1)";
  std::string last = "%v" + std::to_string(s.ops);
  std::string ir =
      decls() +
      "declare i32 @llvm.amdgcn.workitem.id.x()\ndeclare i32 @llvm.amdgcn.workgroup.id.x()\n"
      "define amdgpu_kernel void @" +
      name + "(" + params(s, as) +
      ", i32 %n) #0 {\nentry:\n"
      "  %t = call i32 @llvm.amdgcn.workitem.id.x()\n"
      "  %w = call i32 @llvm.amdgcn.workgroup.id.x()\n"
      "  %wb = mul i32 %w, 256\n  %g = add i32 %wb, %t\n";
  if (s.reduce) {
    // each work-item reduces 8 strided elements
    ir +=
        "  br label %loop\nloop:\n  %j = phi i32 [ 0, %entry ], [ %j1, %loop ]\n"
        "  %acc = phi float [ 0.0, %entry ], [ %acc1, %loop ]\n"
        "  %js = mul i32 %j, %n\n  %ii = add i32 %g, %js\n  %i = zext i32 %ii to i64\n" +
        body(s, as) + "  %acc1 = fadd reassoc nsz float %acc, " + last +
        "\n  %j1 = add i32 %j, 1\n  %d = icmp eq i32 %j1, 8\n  br i1 %d, label %exit, label %loop\n"
        "exit:\n  %gi = zext i32 %g to i64\n"
        "  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %gi\n"
        "  store float %acc1, ptr addrspace(1) %po, align 4\n  ret void\n}\n";
  } else {
    ir +=
        "  %ok = icmp slt i32 %g, %n\n  br i1 %ok, label %body, label %exit\nbody:\n"
        "  %i = sext i32 %g to i64\n" +
        body(s, as) +
        "  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i\n"
        "  store float " +
        last +
        ", ptr addrspace(1) %po, align 4\n  br label %exit\n"
        "exit:\n  ret void\n}\n";
  }
  return ir + "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"1,256\" }\n";
}

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int i = 0; i < 30; ++i) out.push_back({1 + i % 4, 2 + (i * 7) % 23, i % 5 == 4, i % 3 == 1});
  return out;
}

// Phase times of one kernel compile; the benchmark keeps each kernel's fastest of kRepeats runs,
// which filters out interference from other processes on a shared machine.
struct Phases {
  double parse = 0, optimize = 0, codegen = 0, finish = 0, extra = 0;  // finish: JIT load / lld
  double thread_cpu = 0;  // CPU time of the compiling thread over the whole compile
  double total() const { return parse + optimize + codegen + finish + extra; }
  Phases& operator+=(const Phases& o) {
    parse += o.parse, optimize += o.optimize, codegen += o.codegen, finish += o.finish;
    extra += o.extra, thread_cpu += o.thread_cpu;
    return *this;
  }
};

double thread_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
constexpr int kRepeats = 3;

Phases compile_cpu_once(const LlvmTarget& cpu, const std::string& ir, const std::string& name,
                        std::vector<std::unique_ptr<CpuProgram>>& keep) {
  const double c0 = thread_cpu_ms();
  LlvmPhaseTimes t;
  auto obj = llvm_compile_object(cpu, ir, name, &t);
  auto t1 = Clock::now();
  keep.push_back(CpuJit::instance().load(obj, name));
  keep.back()->symbol(name);  // ORC links the object on the first lookup
  return {t.parse_ms, t.optimize_ms, t.codegen_ms, ms_since(t1), 0, thread_cpu_ms() - c0};
}

Phases compile_gfx_once(const LlvmTarget& gfx, const std::string& ir, const std::string& name) {
  const double c0 = thread_cpu_ms();
  AmdCompileTimes t;
  amd_compile(gfx, ir, name, &t);
  return {t.llvm.parse_ms, t.llvm.optimize_ms, t.llvm.codegen_ms,
          t.link_ms,       t.parse_ms,         thread_cpu_ms() - c0};
}

template <typename Fn>
Phases fastest(Fn&& once) {
  Phases best = once();
  for (int r = 1; r < kRepeats; ++r) {
    Phases p = once();
    if (p.total() < best.total()) best = p;
  }
  return best;
}

}  // namespace

int main() {
  auto list = shapes();
  const LlvmTarget cpu = cpu_target(2);
  const LlvmTarget gfx = amdgpu_target("gfx1100", 2, 5);
  const double n = static_cast<double>(list.size());
  std::vector<std::unique_ptr<CpuProgram>> keep;

  auto t0 = Clock::now();
  compile_cpu_once(cpu, cpu_ir(list[0], "cold"), "cold", keep);
  const double cold_cpu = ms_since(t0);
  Phases cpu_sum;
  for (size_t k = 0; k < list.size(); ++k) {
    std::string name = "k";
    name += std::to_string(k);
    std::string ir = cpu_ir(list[k], name);
    cpu_sum += fastest([&] { return compile_cpu_once(cpu, ir, name, keep); });
  }
  std::printf("cpu (%s), %zu kernels, fastest of %d runs each; first (cold) kernel %.2f ms\n",
              cpu.describe().c_str(), list.size(), kRepeats, cold_cpu);
  std::printf(
      "  mean per kernel %.2f ms wall (%.2f ms thread CPU) = parse %.2f + O2 %.2f + "
      "codegen %.2f + jit load %.2f\n",
      cpu_sum.total() / n, cpu_sum.thread_cpu / n, cpu_sum.parse / n, cpu_sum.optimize / n,
      cpu_sum.codegen / n, cpu_sum.finish / n);

  t0 = Clock::now();
  compile_gfx_once(gfx, amd_ir(list[0], "cold"), "cold");
  const double cold_gfx = ms_since(t0);
  Phases gfx_sum;
  for (size_t k = 0; k < list.size(); ++k) {
    std::string name = "k";
    name += std::to_string(k);
    std::string ir = amd_ir(list[k], name);
    gfx_sum += fastest([&] { return compile_gfx_once(gfx, ir, name); });
  }
  std::printf("gfx1100 (cov5), %zu kernels, fastest of %d runs each; first (cold) kernel %.2f ms\n",
              list.size(), kRepeats, cold_gfx);
  std::printf(
      "  mean per kernel %.2f ms wall (%.2f ms thread CPU) = parse %.2f + O2 %.2f + codegen %.2f "
      "+ lld %.2f + metadata %.2f\n",
      gfx_sum.total() / n, gfx_sum.thread_cpu / n, gfx_sum.parse / n, gfx_sum.optimize / n,
      gfx_sum.codegen / n, gfx_sum.finish / n, gfx_sum.extra / n);
  return 0;
}
