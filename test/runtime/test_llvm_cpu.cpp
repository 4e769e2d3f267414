// CPU back end: IR text -> object bytes -> ORC JIT -> run, checked against plain C++ loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "codegen/target.h"
#include "runtime/cpu_jit.h"
#include "runtime/llvm_compile.h"
#include "test/runtime/test_llvm_kernels.h"

using namespace ugrad;
namespace tk = ugrad::test_kernels;

namespace {

using AddFn = void (*)(float*, const float*, const float*, int64_t);
using SumFn = void (*)(float*, const float*, int64_t);
using ScaleFn = void (*)(float*, const float*, int32_t, int64_t);

std::vector<uint8_t> compile_cpu(std::string_view ir, std::string_view what) {
  return llvm_compile_object(cpu_target(2), ir, what);
}

std::vector<float> iota_floats(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 37) % 101) - 1.5f;
  return v;
}

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("llvm_cpu") {
  TEST_CASE("cpu target is the host with features") {
    LlvmTarget t = cpu_target();
    CHECK(t.kind == TargetKind::CPU);
    CHECK_FALSE(t.arch.empty());
    CHECK(t.triple.find("x86_64") != std::string::npos);
    CHECK(t.features.find("+sse2") != std::string::npos);
    CHECK(t.describe().starts_with("cpu:"));
    CHECK(t.cache_key() == cpu_target().cache_key());  // deterministic
    CHECK(t.cache_key() != cpu_target(3).cache_key());
    CHECK(amdgpu_target("gfx1100", 2, 4).cache_key() != amdgpu_target("gfx1100", 2, 5).cache_key());
    CHECK_THROWS_AS(cpu_target(4), Error);
  }

  TEST_CASE("elementwise add runs for awkward lengths") {
    auto obj = compile_cpu(tk::kCpuAdd, "E_add");
    auto prog = CpuJit::instance().load(obj, "E_add");
    auto add = prog->function<AddFn>("E_add");
    for (int64_t n : {0, 1, 7, 17, 1000, 4099}) {
      auto a = iota_floats(n, 0.5f), b = iota_floats(n, -0.25f);
      std::vector<float> out(n + 1, 42.0f);  // one guard element past the end
      add(out.data(), a.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) REQUIRE(out[i] == a[i] + b[i]);
      CHECK(out[n] == 42.0f);
    }
  }

  TEST_CASE("reduction matches a double-precision reference") {
    auto prog = CpuJit::instance().load(compile_cpu(tk::kCpuSum, "R_sum"), "R_sum");
    auto sum = prog->function<SumFn>("R_sum");
    for (int64_t n : {0, 1, 15, 16, 1000, 100003}) {
      auto a = iota_floats(n, 0.01f);
      double ref = 0;
      for (float v : a) ref += v;
      float out = -1;
      sum(&out, a.data(), n);
      CHECK(out == doctest::Approx(ref).epsilon(1e-4));
    }
  }

  TEST_CASE("i32 scalar parameter and a libm call") {
    auto prog = CpuJit::instance().load(compile_cpu(tk::kCpuScale, "E_scale"), "E_scale");
    auto scale = prog->function<ScaleFn>("E_scale");
    const int64_t n = 333;
    auto a = iota_floats(n, 0.05f);
    std::vector<float> out(n);
    for (int32_t k : {-3, 0, 7}) {
      scale(out.data(), a.data(), k, n);
      for (int64_t i = 0; i < n; ++i)
        REQUIRE(out[i] == doctest::Approx(a[i] * k + std::exp2(a[i])).epsilon(1e-5));
    }
  }

  TEST_CASE("the same object loads twice, and programs release independently") {
    auto obj = compile_cpu(tk::kCpuAdd, "E_add");
    auto p1 = CpuJit::instance().load(obj, "E_add");
    auto p2 = CpuJit::instance().load(obj, "E_add");
    CHECK(p1->label() != p2->label());
    auto f1 = p1->function<AddFn>("E_add");
    auto f2 = p2->function<AddFn>("E_add");
    CHECK(reinterpret_cast<void*>(f1) != reinterpret_cast<void*>(f2));
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, out[3] = {};
    f1(out, a, b, 3);
    CHECK(out[2] == 33);
    p1.reset();  // releasing one leaves the other intact
    f2(out, b, b, 3);
    CHECK(out[2] == 60);
    auto p3 = CpuJit::instance().load(obj, "E_add");
    p3->function<AddFn>("E_add")(out, a, a, 3);
    CHECK(out[1] == 4);
  }

  TEST_CASE("PERF_MAP names each loaded kernel for perf: its start and size") {
    auto obj = compile_cpu(tk::kCpuAdd, "E_add");
    ScopedKnob on(Knob::PERF_MAP, "1");
    auto p1 = CpuJit::instance().load(obj, "E_add");
    auto p2 = CpuJit::instance().load(obj, "E_add");
    std::ifstream map(perf_map_path());
    REQUIRE(map.good());
    std::vector<uintptr_t> starts;
    std::string line;
    while (std::getline(map, line)) {
      std::istringstream fields(line);
      uintptr_t start = 0, size = 0;
      std::string name;
      fields >> std::hex >> start >> size >> name;
      CHECK(name == "E_add");  // the object's one global function
      CHECK(size > 16);
      CHECK(size < 4096);
      starts.push_back(start);
    }
    // One line per load, at the address the program hands out.
    for (const auto& p : {p1.get(), p2.get()})
      CHECK(std::count(starts.begin(), starts.end(),
                       reinterpret_cast<uintptr_t>(p->function<AddFn>("E_add"))) == 1);
  }

  TEST_CASE("errors name the problem") {
    std::string parse = error_of([] {
      llvm_compile_object(cpu_target(), "define void @f() {\n  ret i32 0\n}\n", "bad_kernel");
    });
    CHECK(parse.find("bad_kernel") != std::string::npos);
    CHECK(parse.find("line 2") != std::string::npos);

    std::string invalid = error_of([] {  // parses, but %x does not dominate its use
      llvm_compile_object(cpu_target(),
                          "define i32 @f(i1 %c) {\nentry:\n  br i1 %c, label %a, label %b\n"
                          "a:\n  %x = add i32 1, 2\n  br label %b\nb:\n  ret i32 %x\n}\n",
                          "undominated");
    });
    CHECK(invalid.find("invalid IR") != std::string::npos);
    CHECK(invalid.find("undominated") != std::string::npos);

    auto prog = CpuJit::instance().load(compile_cpu(tk::kCpuAdd, "E_add"), "E_add");
    std::string missing = error_of([&] { prog->symbol("E_nope"); });
    CHECK(missing.find("E_nope") != std::string::npos);

    std::vector<uint8_t> garbage(64, 0xab);
    CHECK_FALSE(error_of([&] { CpuJit::instance().load(garbage, "garbage"); }).empty());
  }

  TEST_CASE("x86 assembly and optimized IR for DEBUG") {
    std::string asm_text = llvm_compile(cpu_target(), tk::kCpuAdd, LlvmOutput::Assembly, "E_add");
    CHECK(asm_text.find("E_add:") != std::string::npos);
    CHECK(asm_text.find("addps") != std::string::npos);  // vectorized: (v)addps
    std::string ir = llvm_compile(cpu_target(), tk::kCpuAdd, LlvmOutput::OptimizedIR, "E_add");
    CHECK(ir.find("fadd <") != std::string::npos);
  }

  TEST_CASE("the host's vector features are used") {
    LlvmTarget t = cpu_target();
    std::string asm_text = llvm_compile(t, tk::kCpuAdd, LlvmOutput::Assembly, "E_add");
    // With AVX-512, LLVM's tuning picks zmm (AMD Zen 4) or ymm (Intel cores that prefer 256-bit).
    if (t.features.find("+avx512f") != std::string::npos)
      CHECK(
          (asm_text.find("zmm") != std::string::npos || asm_text.find("ymm") != std::string::npos));
    else if (t.features.find("+avx2") != std::string::npos)
      CHECK(asm_text.find("ymm") != std::string::npos);
    else
      CHECK(asm_text.find("xmm") != std::string::npos);
  }

  TEST_CASE("CPU_LEVEL=avx2 compiles for AVX2 without AVX-512, other values are errors") {
    ScopedKnob level(Knob::CPU_LEVEL, "avx2");
    LlvmTarget t = cpu_target();
    CHECK(t.arch == "x86-64-v3");
    CHECK(t.features.find("+avx2") != std::string::npos);
    CHECK(t.features.find("+avx512") == std::string::npos);
    {  // the program cache keeps the two apart
      ScopedKnob native(Knob::CPU_LEVEL, "native");
      CHECK(cpu_target().cache_key() != t.cache_key());
    }
    const CodegenTarget c = cpu_codegen_target();
    CHECK(c.simd_bytes == 32);
    CHECK_FALSE(c.has_vnni);
    std::string asm_text = llvm_compile(t, tk::kCpuAdd, LlvmOutput::Assembly, "E_add");
    CHECK(asm_text.find("zmm") == std::string::npos);
    ScopedKnob bad(Knob::CPU_LEVEL, "avx9");
    CHECK_THROWS_WITH_AS(cpu_target(), doctest::Contains("CPU_LEVEL must be native or avx2"),
                         Error);
  }

  TEST_CASE("phase times are reported") {
    LlvmPhaseTimes t;
    llvm_compile_object(cpu_target(), tk::kCpuSum, "R_sum", &t);
    CHECK(t.parse_ms > 0);
    CHECK(t.optimize_ms > 0);
    CHECK(t.codegen_ms > 0);
  }

  TEST_CASE("compiles and loads concurrently from several threads") {
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([t, &ok] {
        for (int rep = 0; rep < 3; ++rep) {
          auto prog = CpuJit::instance().load(compile_cpu(tk::kCpuAdd, "E_add"), "E_add");
          float a[4] = {1, 2, 3, float(t)}, out[4] = {};
          prog->function<AddFn>("E_add")(out, a, a, 4);
          ok[t] += out[3] == 2.0f * t;
        }
      });
    for (auto& th : threads) th.join();
    for (int v : ok) CHECK(v == 3);
  }
}
