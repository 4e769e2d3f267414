// DOT4 (int8 dot products of 4-byte words): vpdpbusd on x86 VNNI vector lanes, the byte products
// otherwise, every lane count and the scalar form equal to the constant folder's arithmetic.
#include <doctest/doctest.h>

#include "kernel_harness.h"
#include "uop/alu.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

std::vector<int32_t> words(size_t n, uint32_t seed) {
  std::vector<int32_t> w(n);
  uint32_t s = seed * 2654435761u + 7;
  for (auto& x : w) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<int32_t>(s);
  }
  return w;
}

int32_t naive(int32_t a, int32_t b) {
  const auto x = static_cast<uint32_t>(a), y = static_cast<uint32_t>(b);
  int32_t sum = 0;
  for (int i = 0; i < 32; i += 8)
    sum += static_cast<int32_t>((x >> i) & 255) * static_cast<int8_t>((y >> i) & 255);
  return sum;
}

}  // namespace

TEST_CASE("DOT4 words: vpdpbusd lanes and the byte products equal a byte loop") {
  const int64_t N = 208;
  UOp out = buf(0, dtypes::int32, N), a = buf(1, dtypes::int32, N), b = buf(2, dtypes::int32, N);
  UOp i = UOp::range(N, 0);
  UOp ast = sink({store(out, i, load(a, i).alu(Op::DOT4, load(b, i)))});
  std::vector<int32_t> x = words(N, 1), y = words(N, 2), want(N);
  // The extremes: 255 * 127 and 255 * -128 in every byte, and -128 * 128.
  x[0] = x[1] = -1, y[0] = 0x7f7f7f7f, y[1] = static_cast<int32_t>(0x80808080u);
  x[2] = static_cast<int32_t>(0x80808080u), y[2] = static_cast<int32_t>(0x80808080u);
  for (int64_t k = 0; k < N; ++k) want[k] = naive(x[k], y[k]);
  CHECK(want[0] == 4 * 255 * 127);
  CHECK(want[1] == 4 * 255 * -128);
  CHECK(want[2] == 4 * 128 * -128);
  for (int64_t k = 0; k < N; ++k) {  // the constant folder agrees
    const ConstValue v[] = {int64_t{x[k]}, int64_t{y[k]}};
    CHECK(const_as_int(exec_alu(Op::DOT4, dtypes::int32, v)) == want[k]);
  }
  CodegenTarget plain = cpu_codegen_target();
  plain.has_vnni = false;
  for (int64_t lanes : {0, 4, 8, 16})
    for (const CodegenTarget& t : {plain, cpu_codegen_target()}) {
      CAPTURE(lanes);
      CAPTURE(t.has_vnni);
      CodegenOptions o;
      o.opts = lanes ? std::vector<Opt>{{OptType::Upcast, 0, lanes}} : std::vector<Opt>{};
      Kernel k = compile(ast, o, t);
      std::vector<int32_t> got(N, 12345);
      k.run({got.data(), x.data(), y.data()});
      CHECK(got == want);
      const bool vnni = k.ks.src.find("vpdpbusd") != std::string::npos;
      CHECK(vnni == (t.has_vnni && lanes > 0));
    }
}
