// LLVM-upgrade safety: (1) the opcode table regenerated from the installed LLVM equals the
// checked-in one; (2) our decoder agrees with LLVM's disassembler on every instruction of the
// compiled kernels (length and mnemonic); (3) a dtype x op matrix of kernels compiled for gfx1100
// uses no opcode the emulator lacks (the report lists any); (4) a subset of that matrix runs on
// the emulator and matches C++ references.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/amd/hip_device.h"
#include "runtime/llvm_disasm.h"
#include "runtime/llvm_target.h"
#include "test/mockgpu/emu.h"
#include "test/runtime/test_llvm_kernels.h"

using namespace ugrad;
namespace tk = ugrad::test_kernels;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// An elementwise kernel: out[g] = <body>(a[g], b[g]) over T inputs and an R result.
std::string elementwise_ir(const std::string& name, const std::string& t, const std::string& r,
                           const std::string& body, const std::string& decls = "") {
  return "declare i32 @llvm.amdgcn.workitem.id.x()\ndeclare i32 @llvm.amdgcn.workgroup.id.x()\n" +
         decls + "\ndefine amdgpu_kernel void @" + name +
         "(ptr addrspace(1) noalias %out, ptr addrspace(1) noalias %a, ptr addrspace(1) noalias "
         "%b) #0 {\n"
         "  %tid = call i32 @llvm.amdgcn.workitem.id.x()\n"
         "  %wg = call i32 @llvm.amdgcn.workgroup.id.x()\n"
         "  %base = mul i32 %wg, 256\n  %g = add i32 %base, %tid\n  %i = zext i32 %g to i64\n"
         "  %pa = getelementptr inbounds " +
         t +
         ", ptr addrspace(1) %a, i64 %i\n"
         "  %pb = getelementptr inbounds " +
         t +
         ", ptr addrspace(1) %b, i64 %i\n"
         "  %va = load " +
         t +
         ", ptr addrspace(1) %pa\n"
         "  %vb = load " +
         t + ", ptr addrspace(1) %pb\n" + body + "\n  %po = getelementptr inbounds " + r +
         ", ptr addrspace(1) %out, i64 %i\n"
         "  store " +
         r +
         " %r, ptr addrspace(1) %po\n  ret void\n}\n"
         "attributes #0 = { \"amdgpu-flat-work-group-size\"=\"1,256\" }\n";
}

struct MatrixKernel {
  std::string name, ir;
};

// The dtype x op matrix (ugrad's elementwise shapes): every float and integer type with the
// arithmetic, comparison, transcendental and cast ops ugrad emits.
std::vector<MatrixKernel> matrix() {
  std::vector<MatrixKernel> ks;
  int id = 0;
  auto add = [&](const std::string& t, const std::string& r, const std::string& body,
                 const std::string& decls = "") {
    std::string name = fmt::format("M{}", id++);
    ks.push_back({name, elementwise_ir(name, t, r, body, decls)});
  };
  for (std::string t : {"half", "float", "double"}) {
    const std::string sfx = t == "half" ? "f16" : t == "float" ? "f32" : "f64";
    for (std::string op : {"fadd", "fsub", "fmul", "fdiv"})
      add(t, t, "  %r = " + op + " " + t + " %va, %vb");
    add(t, t, "  %r = fneg " + t + " %va");
    add(t, t,
        "  %c = fcmp olt " + t + " %va, %vb\n  %r = select i1 %c, " + t + " %va, " + t + " %vb");
    add(t, t,
        "  %c = fcmp une " + t + " %va, %vb\n  %r = select i1 %c, " + t + " %va, " + t + " %vb");
    std::vector<std::string> un = {"sqrt", "fabs", "floor", "trunc", "ceil", "rint"};
    if (t != "double") un.insert(un.end(), {"exp2", "log2", "sin"});
    for (const std::string& f : un)
      add(t, t, "  %r = call " + t + " @llvm." + f + "." + sfx + "(" + t + " %va)",
          "declare " + t + " @llvm." + f + "." + sfx + "(" + t + ")");
    for (std::string f : {"maxnum", "minnum"})
      add(t, t, "  %r = call " + t + " @llvm." + f + "." + sfx + "(" + t + " %va, " + t + " %vb)",
          "declare " + t + " @llvm." + f + "." + sfx + "(" + t + ", " + t + ")");
    add(t, t,
        "  %r = call " + t + " @llvm.fma." + sfx + "(" + t + " %va, " + t + " %vb, " + t + " %va)",
        "declare " + t + " @llvm.fma." + sfx + "(" + t + ", " + t + ", " + t + ")");
    for (std::string it : {"i8", "i16", "i32", "i64"}) {
      add(t, it, "  %r = fptosi " + t + " %va to " + it);
      add(t, it, "  %r = fptoui " + t + " %va to " + it);
      add(it, t, "  %r = sitofp " + it + " %va to " + t);
      add(it, t, "  %r = uitofp " + it + " %va to " + t);
    }
    for (std::string t2 : {"half", "float", "double"}) {
      if (t2 == t) continue;
      const bool ext = (t == "half") || (t == "float" && t2 == "double");
      add(t, t2, "  %r = " + std::string(ext ? "fpext " : "fptrunc ") + t + " %va to " + t2);
    }
  }
  for (std::string t : {"i8", "i16", "i32", "i64"}) {
    for (std::string op : {"add", "sub", "mul", "sdiv", "udiv", "srem", "urem", "and", "or", "xor",
                           "shl", "lshr", "ashr"})
      add(t, t, "  %r = " + op + " " + t + " %va, %vb");
    for (std::string c : {"slt", "ult", "eq", "ne", "sgt", "uge"})
      add(t, t,
          "  %c = icmp " + c + " " + t + " %va, %vb\n  %r = select i1 %c, " + t + " %va, " + t +
              " %vb");
    for (std::string f : {"smax", "umin"})
      add(t, t, "  %r = call " + t + " @llvm." + f + "." + t + "(" + t + " %va, " + t + " %vb)",
          "declare " + t + " @llvm." + f + "." + t + "(" + t + ", " + t + ")");
    for (std::string t2 : {"i8", "i16", "i32", "i64"}) {
      if (t2 == t) continue;
      const int w1 = std::stoi(t.substr(1)), w2 = std::stoi(t2.substr(1));
      if (w2 > w1) {
        add(t, t2, "  %r = sext " + t + " %va to " + t2);
        add(t, t2, "  %r = zext " + t + " %va to " + t2);
      } else {
        add(t, t2, "  %r = trunc " + t + " %va to " + t2);
      }
    }
  }
  // bool results and bf16 conversions
  add("float", "i8", "  %c = fcmp oge float %va, %vb\n  %r = zext i1 %c to i8");
  add("float", "bfloat", "  %r = fptrunc float %va to bfloat");
  add("bfloat", "float", "  %r = fpext bfloat %va to float");
  return ks;
}

}  // namespace

TEST_CASE("the checked-in opcode table equals the table regenerated from the installed LLVM") {
  const std::string table =
      read_file(std::string(UGRAD_SOURCE_DIR) + "/test/mockgpu/opcode_table.inc");
  REQUIRE(!table.empty());
  FILE* p = popen(UGRAD_GEN_OPCODES, "r");
  REQUIRE(p != nullptr);
  std::string generated;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) generated.append(buf, n);
  CHECK(pclose(p) == 0);
  // An LLVM upgrade changes this: regenerate with mockgpu_gen_opcodes > opcode_table.inc and
  // review the diff (new or renumbered opcodes need semantics).
  CHECK(generated == table);
}

TEST_CASE(
    "our decoder agrees with LLVM's disassembler and the matrix uses only implemented opcodes") {
  LlvmTarget target = amdgpu_target("gfx1100");
  std::vector<MatrixKernel> ks = matrix();
  for (auto [name, ir] : {std::pair{"E_add", tk::kAmdAdd},
                          {"R_sum", tk::kAmdSum},
                          {"E_scale", tk::kAmdScale},
                          {"E_mixed", tk::kAmdMixed},
                          {"L_reverse", tk::kAmdLds},
                          {"W_wmma", tk::kAmdWmma},
                          {"D_sdot4", tk::kAmdDot}})
    ks.push_back({name, std::string(ir)});
  std::map<std::string, std::set<std::string>> missing;  // mnemonic -> kernels
  std::set<std::string> seen;
  size_t instructions = 0, compiled = 0;
  std::vector<std::string> compile_errors;
  for (const MatrixKernel& k : ks) {
    AmdBinary bin;
    try {
      bin = amd_compile(target, k.ir, k.name);
    } catch (const Error& e) {
      compile_errors.push_back(k.name + ": " + e.what());
      continue;
    }
    ++compiled;
    const AmdCodeObject& co = bin.info;
    mockgpu::Program prog = mockgpu::build_program(bin.code_object.data() + co.text_offset,
                                                   co.text_size, co.text_address);
    for (const std::string& m : mockgpu::unimplemented_mnemonics(prog)) missing[m].insert(k.name);
    // Oracle: LLVM's listing "  <mnemonic> ...  // <address>" for each instruction.
    std::istringstream lines(disassemble_amdgpu(bin.code_object));
    std::map<uint64_t, std::string> llvm_names;
    for (std::string line; std::getline(lines, line);) {
      size_t at = line.rfind("// ");
      if (at == std::string::npos || line[0] != '\t') continue;
      uint64_t addr = std::stoull(line.substr(at + 3), nullptr, 16);
      size_t b = line.find_first_not_of('\t');
      llvm_names[addr] = line.substr(b, line.find_first_of(" \t", b) - b);
    }
    for (const mockgpu::Inst& in : prog.insts) {
      const uint64_t addr = co.text_address + in.pc;
      auto it = llvm_names.find(addr);
      if (it == llvm_names.end()) continue;  // inside the s_code_end run LLVM prints once
      std::string ours(in.name);
      if (in.enc == mockgpu::Enc::VOPDX)
        ours = std::string(mockgpu::opcode_name(mockgpu::Enc::VOPDX, in.op));
      INFO(k.name, " at 0x", std::hex, addr);
      CHECK(ours == it->second);
      seen.insert(ours);
      ++instructions;
    }
    // Every LLVM instruction boundary is one of ours (same lengths).
    for (const auto& entry : llvm_names) {
      const auto addr = entry.first;
      INFO(k.name, " LLVM instruction ", entry.second, " at 0x", std::hex, addr);
      CHECK(prog.index_at(addr - co.text_address) >= 0);
    }
  }
  size_t rows = 0, implemented = 0;
  for (int e = 0; e < static_cast<int>(mockgpu::Enc::UNKNOWN); ++e) {
    for (unsigned op = 0; op < 1024; ++op) {
      std::string_view name = mockgpu::opcode_name(static_cast<mockgpu::Enc>(e), op);
      if (name.empty()) continue;
      ++rows;
      implemented += mockgpu::op_registry().count(mockgpu::canonical_mnemonic(name));
    }
  }
  MESSAGE("emulator semantics for " << implemented << " of LLVM's " << rows
                                    << " gfx1100 (encoding, opcode) rows");
  MESSAGE(compiled << " kernels compiled for gfx1100, " << instructions << " instructions, "
                   << seen.size() << " distinct mnemonics");
  for (const std::string& e : compile_errors) MESSAGE("not compiled (LLVM limitation): " << e);
  std::string report;
  for (const auto& [m, kernels] : missing) report += "  " + m + " (in " + *kernels.begin() + ")\n";
  INFO("opcodes the emulator does not implement:\n", report);
  CHECK(missing.empty());
}

namespace {

// Runs an elementwise matrix kernel on libmockhip.so over n inputs and returns the outputs.
template <typename T, typename R>
std::vector<R> run_elementwise(HipDevice& dev, const std::string& ir, const std::vector<T>& a,
                               const std::vector<T>& b) {
  AmdBinary bin = amd_compile(dev.target(), ir, "M");
  auto module = dev.load_module(bin.code_object);
  const size_t n = a.size();
  void* po = dev.allocate(n * sizeof(R));
  void* pa = dev.allocate(n * sizeof(T));
  void* pb = dev.allocate(n * sizeof(T));
  dev.copy_to_device(pa, a.data(), n * sizeof(T));
  dev.copy_to_device(pb, b.data(), n * sizeof(T));
  std::vector<uint64_t> bufs = {reinterpret_cast<uint64_t>(po), reinterpret_cast<uint64_t>(pa),
                                reinterpret_cast<uint64_t>(pb)};
  std::vector<uint8_t> args = pack_kernargs(bin.info.kernel("M"), bufs, {});
  dev.launch(module->function("M"), {static_cast<uint32_t>(n / 256), 1, 1}, {256, 1, 1}, args);
  std::vector<R> out(n);
  dev.copy_to_host(out.data(), po, n * sizeof(R));
  dev.release(po);
  dev.release(pa);
  dev.release(pb);
  return out;
}

template <typename T>
std::vector<T> inputs(uint32_t seed, double lo, double hi, bool nonzero = false) {
  std::mt19937 rng(seed);
  std::vector<T> v(512);
  for (T& x : v) {
    if constexpr (!std::is_integral_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      x = static_cast<T>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo),
                                                                static_cast<int64_t>(hi))(rng));
      if (nonzero && x == 0) x = 1;
    }
  }
  return v;
}

// ulp distance for float-like results (0 means bit-identical).
template <typename R>
double ulps(R got, R want) {
  if constexpr (std::is_integral_v<R>) {
    return got == want ? 0 : 1e9;
  } else {
    const double g = static_cast<double>(got), w = static_cast<double>(want);
    if (std::isnan(g) && std::isnan(w)) return 0;
    if (g == w) return 0;
    const int mant = std::is_same_v<R, double> ? 52 : std::is_same_v<R, float> ? 23 : 10;
    return std::fabs(g - w) / std::ldexp(1.0, std::ilogb(w == 0 ? g : w) - mant);
  }
}

template <typename T, typename R, typename Ref>
void check_op(HipDevice& dev, const std::string& t, const std::string& r, const std::string& body,
              const std::string& decls, const std::vector<T>& a, const std::vector<T>& b, Ref ref,
              double max_ulps) {
  std::vector<R> got = run_elementwise<T, R>(dev, elementwise_ir("M", t, r, body, decls), a, b);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    R want = ref(a[i], b[i]);
    double u = ulps(got[i], want);
    if (u > worst) worst = u;
    if (u > max_ulps) {
      FAIL_CHECK(body << ": a=" << double(a[i]) << " b=" << double(b[i])
                      << " got=" << double(got[i]) << " want=" << double(want));
      return;
    }
  }
  MESSAGE(body << " (" << t << "): max " << worst << " ulp");
}

}  // namespace

TEST_CASE("matrix kernels run on the emulator and match C++ references") {
  ScopedKnob lib(Knob::HIP_LIB, UGRAD_MOCKHIP_LIB);
  std::unique_ptr<HipDevice> dev = HipDevice::open(0);
  auto fa = inputs<float>(1, -100, 100), fb = inputs<float>(2, -100, 100);
  auto fp = inputs<float>(3, 1e-3, 1e4);
  auto fs = inputs<float>(4, -3, 3);
  // exactly rounded ops: bit-exact
  check_op<float, float>(
      *dev, "float", "float", "  %r = fadd float %va, %vb", "", fa, fb,
      [](float x, float y) { return x + y; }, 0);
  check_op<float, float>(
      *dev, "float", "float", "  %r = fdiv float %va, %vb", "", fa, fb,
      [](float x, float y) { return x / y; }, 0);
  check_op<float, float>(
      *dev, "float", "float", "  %r = call float @llvm.sqrt.f32(float %va)",
      "declare float @llvm.sqrt.f32(float)", fp, fp, [](float x, float) { return std::sqrt(x); },
      1);
  check_op<float, int32_t>(
      *dev, "float", "i32", "  %r = fptosi float %va to i32", "", fa, fb,
      [](float x, float) { return static_cast<int32_t>(x); }, 0);
  check_op<float, float>(
      *dev, "float", "float", "  %r = call float @llvm.floor.f32(float %va)",
      "declare float @llvm.floor.f32(float)", fa, fb, [](float x, float) { return std::floor(x); },
      0);
  // transcendentals: LLVM's expansions around v_exp/v_log/v_sin
  check_op<float, float>(
      *dev, "float", "float", "  %r = call float @llvm.exp2.f32(float %va)",
      "declare float @llvm.exp2.f32(float)", fs, fs,
      [](float x, float) { return static_cast<float>(std::exp2(double(x))); }, 2);
  check_op<float, float>(
      *dev, "float", "float", "  %r = call float @llvm.log2.f32(float %va)",
      "declare float @llvm.log2.f32(float)", fp, fp,
      [](float x, float) { return static_cast<float>(std::log2(double(x))); }, 2);
  check_op<float, float>(
      *dev, "float", "float", "  %r = call float @llvm.sin.f32(float %va)",
      "declare float @llvm.sin.f32(float)", fs, fs,
      [](float x, float) { return static_cast<float>(std::sin(double(x))); }, 64);
  // integers: bit-exact (division by runtime values goes through v_rcp_iflag + fixups)
  auto ia = inputs<int32_t>(5, INT32_MIN, INT32_MAX), ib = inputs<int32_t>(6, -70000, 70000, true);
  check_op<int32_t, int32_t>(
      *dev, "i32", "i32", "  %r = sdiv i32 %va, %vb", "", ia, ib,
      [](int32_t x, int32_t y) { return x / y; }, 0);
  check_op<int32_t, int32_t>(
      *dev, "i32", "i32", "  %r = urem i32 %va, %vb", "", ia, ib,
      [](int32_t x, int32_t y) { return static_cast<int32_t>(uint32_t(x) % uint32_t(y)); }, 0);
  check_op<int32_t, int32_t>(
      *dev, "i32", "i32", "  %r = ashr i32 %va, %vb", "", ia, ib,
      [](int32_t x, int32_t y) { return x >> (y & 31); }, 0);
  auto la = inputs<int64_t>(7, static_cast<double>(INT64_MIN / 2),
                            static_cast<double>(INT64_MAX / 2)),
       lb = inputs<int64_t>(8, -(int64_t{1} << 40), int64_t{1} << 40, true);
  check_op<int64_t, int64_t>(
      *dev, "i64", "i64", "  %r = mul i64 %va, %vb", "", la, lb,
      [](int64_t x, int64_t y) { return int64_t(uint64_t(x) * uint64_t(y)); }, 0);
  check_op<int64_t, int64_t>(
      *dev, "i64", "i64", "  %r = sdiv i64 %va, %vb", "", la, lb,
      [](int64_t x, int64_t y) { return x / y; }, 0);
  check_op<int64_t, int64_t>(
      *dev, "i64", "i64", "  %r = urem i64 %va, %vb", "", la, lb,
      [](int64_t x, int64_t y) { return int64_t(uint64_t(x) % uint64_t(y)); }, 0);
  auto ba = inputs<int8_t>(9, -128, 127), bb = inputs<int8_t>(10, -128, 127, true);
  check_op<int8_t, int8_t>(
      *dev, "i8", "i8", "  %r = sdiv i8 %va, %vb", "", ba, bb,
      [](int8_t x, int8_t y) { return int8_t(x / y); }, 0);
  // f16 (where the compiler has _Float16: clang 14 lacks it on x86) and f64
#ifdef __FLT16_MAX__
  using f16 = _Float16;
  auto ha = inputs<f16>(11, -8, 8), hb = inputs<f16>(12, 0.5, 8);
  check_op<f16, f16>(
      *dev, "half", "half", "  %r = fdiv half %va, %vb", "", ha, hb,
      [](f16 x, f16 y) { return static_cast<f16>(float(x) / float(y)); }, 0);
  check_op<f16, f16>(
      *dev, "half", "half", "  %r = fmul half %va, %vb", "", ha, hb,
      [](f16 x, f16 y) { return static_cast<f16>(float(x) * float(y)); }, 0);
  check_op<f16, float>(
      *dev, "half", "float", "  %r = fpext half %va to float", "", ha, hb,
      [](f16 x, f16) { return float(x); }, 0);
#endif
  auto da = inputs<double>(13, -1e3, 1e3), db = inputs<double>(14, 1e-3, 1e3);
  check_op<double, double>(
      *dev, "double", "double", "  %r = fdiv double %va, %vb", "", da, db,
      [](double x, double y) { return x / y; }, 0);
  check_op<double, double>(
      *dev, "double", "double", "  %r = call double @llvm.sqrt.f64(double %vb)",
      "declare double @llvm.sqrt.f64(double)", da, db,
      [](double, double y) { return std::sqrt(y); }, 0);
  check_op<double, float>(
      *dev, "double", "float", "  %r = fptrunc double %va to float", "", da, db,
      [](double x, double) { return static_cast<float>(x); }, 0);
}
