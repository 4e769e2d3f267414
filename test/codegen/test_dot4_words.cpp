// DOT4 (int8 dot products of 32-bit words, uop/ops.h) on the CPU: the byte products of pm_decomp
// for every signedness and lane count, run and checked against the naive reference; vpdpbusd on
// 4, 8 or 16 lanes of an x86 VNNI target (uint8 x int8 only), checked in the IR and the assembly
// of a VNNI CPU (it runs only on a VNNI host).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "kernel_harness.h"
#include "runtime/llvm_compile.h"
#include "test/dot4_reference.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

std::vector<uint32_t> words(size_t n, uint32_t seed) {
  std::vector<uint32_t> w(n);
  uint32_t s = seed * 2654435761u + 7;
  for (auto& x : w) {
    s = s * 1664525u + 1013904223u;
    x = s;
  }
  const std::vector<uint32_t> extremes = extreme_dot4_words();
  for (size_t i = 0; i < extremes.size() * extremes.size(); ++i)  // every pair of extremes
    w[i] = seed == 1 ? extremes[i / extremes.size()] : extremes[i % extremes.size()];
  return w;
}

constexpr int64_t N = 208;

// out[i] = DOT4(a[i], b[i], acc) with acc = c[i] (loaded) or 0 (the Tensor dot4 form).
UOp dot4_kernel(Dot4Arg signs, bool loaded_acc) {
  UOp out = buf(0, dtypes::int32, N), a = buf(1, dtypes::int32, N), b = buf(2, dtypes::int32, N),
      c = buf(3, dtypes::int32, N);
  UOp i = UOp::range(N, 0);
  UOp acc = loaded_acc ? load(c, i) : UOp::cnst_int(dtypes::int32, 0);
  return sink(
      {store(out, i, UOp::make(Op::DOT4, dtypes::int32, {load(a, i), load(b, i), acc}, signs))});
}

CodegenOptions lanes_opts(int64_t lanes) {
  CodegenOptions o;
  o.opts = lanes ? std::vector<Opt>{{OptType::Upcast, 0, lanes}} : std::vector<Opt>{};
  return o;
}

const Dot4Arg kVnni{.a_signed = false, .b_signed = true};

}  // namespace

TEST_CASE("DOT4 words: every signedness, lane count and accumulator equals the reference") {
  std::vector<uint32_t> x = words(N, 1), y = words(N, 2), z = words(N, 3);
  CodegenTarget plain = cpu_codegen_target();
  plain.has_vnni = false;
  for (const Dot4Arg& s : all_dot4_signs())
    for (bool loaded_acc : {false, true}) {
      std::vector<int32_t> want(N);
      for (int64_t k = 0; k < N; ++k)
        want[k] = dot4_reference(x[k], y[k], loaded_acc ? int32_t(z[k]) : 0, s);
      for (int64_t lanes : {0, 4, 8, 16})
        for (const CodegenTarget& t : {plain, cpu_codegen_target()}) {
          CAPTURE(arg_to_string(s));
          CAPTURE(loaded_acc);
          CAPTURE(lanes);
          CAPTURE(t.has_vnni);
          Kernel k = compile(dot4_kernel(s, loaded_acc), lanes_opts(lanes), t);
          std::vector<int32_t> got(N, 12345);
          k.run({got.data(), x.data(), y.data(), z.data()});
          CHECK(got == want);
          const bool vnni = k.ks.src.find("vpdpbusd") != std::string::npos;
          CHECK(vnni == (t.has_vnni && s == kVnni && lanes > 0));
        }
    }
}

TEST_CASE("DOT4 words: a VNNI target renders uint8 x int8 as vpdpbusd with its accumulator") {
  // The host's target with VNNI forced on: compiled to IR and to a VNNI CPU's assembly, not run.
  CodegenTarget vnni = avx512_width_target();
  vnni.has_vnni = true;
  LlvmTarget sapphire = cpu_target();
  sapphire.arch = "sapphirerapids";
  sapphire.features = "";
  for (const Dot4Arg& s : all_dot4_signs())
    for (bool loaded_acc : {false, true})
      for (int64_t lanes : {4, 8, 16}) {
        CAPTURE(arg_to_string(s));
        CAPTURE(loaded_acc);
        CAPTURE(lanes);
        const KernelSource ks = codegen(dot4_kernel(s, loaded_acc), vnni, lanes_opts(lanes));
        const std::string call = fmt::format(
            "call <{0} x i32> @llvm.x86.avx512.vpdpbusd.{1}(<{0} x i32> ", lanes, 32 * lanes);
        const size_t at = ks.src.find(call);
        CHECK((at != std::string::npos) == (s == kVnni));
        if (at == std::string::npos) continue;
        // a constant 0 accumulator is zeroinitializer; a loaded one is passed in
        CHECK((ks.src.compare(at + call.size(), 15, "zeroinitializer") == 0) == !loaded_acc);
        const std::string asm_text = llvm_compile(sapphire, ks.src, LlvmOutput::Assembly, ks.name);
        CHECK(asm_text.find("vpdpbusd") != std::string::npos);
      }
}

TEST_CASE("DOT4 words: a sum of DOT4s accumulates in one vpdpbusd chain on a VNNI target") {
  // out[i] = DOT4(a, b, 0) + DOT4(b, c, 0) + DOT4(c, a, 0) (the Tensor form of an int8 dot product
  // over three words): each addition folds into the DOT4 after it, so the IR has three calls and
  // no vector add; every target computes the reference.
  std::vector<uint32_t> x = words(N, 1), y = words(N, 2), z = words(N, 3);
  UOp out = buf(0, dtypes::int32, N), a = buf(1, dtypes::int32, N), b = buf(2, dtypes::int32, N),
      c = buf(3, dtypes::int32, N);
  UOp i = UOp::range(N, 0);
  auto dot = [&](const UOp& p, const UOp& q) {
    return UOp::make(Op::DOT4, dtypes::int32,
                     {load(p, i), load(q, i), UOp::cnst_int(dtypes::int32, 0)}, kVnni);
  };
  const UOp kernel = sink({store(out, i, dot(a, b) + dot(b, c) + dot(c, a))});
  std::vector<int32_t> want(N);
  for (int64_t k = 0; k < N; ++k)
    want[k] = dot4_reference(
        z[k], x[k], dot4_reference(y[k], z[k], dot4_reference(x[k], y[k], 0, kVnni), kVnni), kVnni);
  CodegenTarget vnni = avx512_width_target();
  vnni.has_vnni = true;
  const KernelSource ks = codegen(kernel, vnni, lanes_opts(16));
  size_t calls = 0;
  for (size_t at = ks.src.find("@llvm.x86.avx512.vpdpbusd.512(<16 x i32> ");
       at != std::string::npos;
       at = ks.src.find("@llvm.x86.avx512.vpdpbusd.512(<16 x i32> ", at + 1))
    ++calls;
  CHECK(calls == 3);
  CHECK(ks.src.find("add <16 x i32>") == std::string::npos);
  CodegenTarget plain = cpu_codegen_target();
  plain.has_vnni = false;
  for (const CodegenTarget& t : {plain, cpu_codegen_target()})
    for (int64_t lanes : {0, 16}) {
      CAPTURE(t.has_vnni);
      CAPTURE(lanes);
      Kernel k = compile(kernel, lanes_opts(lanes), t);
      std::vector<int32_t> got(N, 12345);
      k.run({got.data(), x.data(), y.data(), z.data()});
      CHECK(got == want);
    }
}
