// BYTE_LUT (a 16-entry byte table per byte of a 32-bit word, uop/ops.h) on the CPU: the shifts
// and selects of pm_decomp for every lane count, and x86 vpshufb on 4, 8 or 16 words, run and
// checked against the naive reference; the instruction chosen checked in the IR and in the
// assembly of an AVX-512BW CPU.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "kernel_harness.h"
#include "runtime/llvm_compile.h"
#include "test/byte_lut_reference.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

constexpr int64_t N = 208;

// out[i] = BYTE_LUT(a[i]) in `dtype` words.
UOp byte_lut_kernel(DType dtype) {
  UOp out = buf(0, dtype, N), a = buf(1, dtype, N);
  UOp i = UOp::range(N, 0);
  return sink({store(out, i, UOp::make(Op::BYTE_LUT, dtype, {load(a, i)}, byte_lut_table()))});
}

CodegenOptions lanes_opts(int64_t lanes) {
  CodegenOptions o;
  o.opts = lanes ? std::vector<Opt>{{OptType::Upcast, 0, lanes}} : std::vector<Opt>{};
  return o;
}

}  // namespace

TEST_CASE("BYTE_LUT: every lane count, word dtype and target equals the reference") {
  std::vector<uint32_t> x(N);
  uint32_t s = 12345;
  for (auto& v : x) v = s = s * 1664525u + 1013904223u;
  x[0] = 0, x[1] = 0xFFFFFFFFu, x[2] = 0x0F0F0F0Fu, x[3] = 0x80808080u;  // high bits ignored
  std::vector<uint32_t> want(N);
  for (int64_t k = 0; k < N; ++k) want[k] = byte_lut_reference(x[k], byte_lut_table());
  CodegenTarget plain = cpu_codegen_target();
  plain.byte_shuffle_words = 0;
  for (DType dtype : {dtypes::int32, dtypes::uint32})
    for (int64_t lanes : {0, 2, 4, 8, 16})
      for (const CodegenTarget& t : {plain, cpu_codegen_target()}) {
        CAPTURE(to_string(dtype));
        CAPTURE(lanes);
        CAPTURE(t.byte_shuffle_words);
        Kernel k = compile(byte_lut_kernel(dtype), lanes_opts(lanes), t);
        std::vector<uint32_t> got(N, 12345);
        k.run({got.data(), x.data()});
        CHECK(got == want);
        const bool shuffle = k.ks.src.find("pshuf.b") != std::string::npos;
        CHECK(shuffle == (lanes >= 4 && lanes <= t.byte_shuffle_words));
      }
}

TEST_CASE("BYTE_LUT: an x86 target renders 4, 8 and 16 words as one vpshufb each") {
  // The host's target with the shuffle widths forced: compiled to IR and to the assembly of an
  // AVX-512BW CPU, not run.
  LlvmTarget sapphire = cpu_target();
  sapphire.arch = "sapphirerapids";
  sapphire.features = "";
  for (int64_t lanes : {4, 8, 16}) {
    CAPTURE(lanes);
    CodegenTarget t = avx512_width_target();
    t.byte_shuffle_words = 16;
    const KernelSource ks = codegen(byte_lut_kernel(dtypes::uint32), t, lanes_opts(lanes));
    const char* fn = lanes == 4   ? "@llvm.x86.ssse3.pshuf.b.128"
                     : lanes == 8 ? "@llvm.x86.avx2.pshuf.b"
                                  : "@llvm.x86.avx512.pshuf.b.512";
    // the table, repeated in every 16-byte lane (201 is -55 as an i8), and the low-bits mask
    const std::string call =
        fmt::format("call <{0} x i8> {1}(<{0} x i8> <i8 -55, i8 0, i8 17, ", 4 * lanes, fn);
    CHECK(ks.src.find(call) != std::string::npos);
    CHECK(ks.src.find("i8 15, i8 15") != std::string::npos);
    const std::string asm_text = llvm_compile(sapphire, ks.src, LlvmOutput::Assembly, ks.name);
    CHECK(asm_text.find("vpshufb") != std::string::npos);
    t.byte_shuffle_words = 8;  // an AVX2 target: 16 words decomposed
    const KernelSource avx2 = codegen(byte_lut_kernel(dtypes::uint32), t, lanes_opts(lanes));
    CHECK((avx2.src.find("pshuf.b") != std::string::npos) == (lanes <= 8));
  }
}
