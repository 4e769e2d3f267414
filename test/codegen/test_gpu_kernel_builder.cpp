// Hand-written kernels through the kernel builder: explicit workgroup/workitem ranges, LDS with a
// barrier, a WMMA tile and dot4 ops, compiled for gfx1100 (and run on the CPU where it applies).
#include <doctest/doctest.h>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "gpu_harness.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {
const CodegenOptions kNoopt{.noopt = 1};
}

TEST_CASE("kernel builder: explicit global x local elementwise, also on the CPU") {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {1024}), in = kb.buffer(dtypes::float32, {1024});
  UOp g = kb.global(8), l = kb.local(128);
  UOp i = g * 128 + l;
  kb.store(out.at(i), in(i)*UOp::cnst(dtypes::float32, 2.0));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{8});
  CHECK(k.local() == std::vector<int64_t>{128});
  // On the CPU the GPU ranges are loops.
  Kernel cpu = compile(kb.build(), kNoopt);
  std::vector<float> x = randf(1024, 7), y(1024);
  cpu.run({y.data(), x.data()});
  for (size_t j = 0; j < x.size(); ++j) CHECK(y[j] == 2 * x[j]);
}

TEST_CASE("kernel builder: a workgroup reverses its tile through LDS") {
  KernelBuilder kb;
  const int64_t n = 256;
  View out = kb.buffer(dtypes::float32, {4 * n}), in = kb.buffer(dtypes::float32, {4 * n});
  UOp g = kb.global(4), l = kb.local(n);
  View tile = kb.lds(dtypes::float32, {n});
  UOp st = lds_store(tile.at(l), in(g * n + l));
  View shared = barrier(tile, {st});
  kb.store(out.at(g * n + l), shared(l * -1 + (n - 1)));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  const std::string isa = k.isa();
  CHECK(isa.find("ds_store_b32") != std::string::npos);
  CHECK(isa.find("s_barrier") != std::string::npos);
  CHECK(isa.find("ds_load_b32") != std::string::npos);
  CHECK(k.bin.info.kernel(k.ks.entry).group_segment_size == n * 4);
  // On the CPU the barrier ends a loop over the workitems: the reads run in a second one.
  Kernel cpu = compile(kb.build(), kNoopt);
  std::vector<float> x = randf(4 * n, 8), y(4 * n);
  cpu.run({y.data(), x.data()});
  for (int64_t q = 0; q < 4; ++q)
    for (int64_t t = 0; t < n; ++t) REQUIRE(y[q * n + t] == x[q * n + (n - 1 - t)]);
  // Two arrays of one size stay two arrays.
  KernelBuilder kb2;
  CHECK(!(kb2.lds(dtypes::float32, {64}).mem() == kb2.lds(dtypes::float32, {64}).mem()));
}

TEST_CASE("kernel builder: one WMMA tile per wave, hand-written") {
  // C[16x16] = A[16x16] * B[16x16] with A row-major, B column-major (both f16), one wave.
  KernelBuilder kb;
  View c = kb.buffer(dtypes::float32, {256}), a = kb.buffer(dtypes::float16, {256}),
       b = kb.buffer(dtypes::float16, {256});
  UOp lane = kb.local(32);
  UOp row = lane % 16, half = lane.idiv(16);
  std::vector<UOp> fa, fb, zero(8, UOp::cnst(dtypes::float32, 0.0));
  for (int64_t j = 0; j < 16; ++j) {
    fa.push_back(a(row * 16 + j));
    fb.push_back(b(row * 16 + j));
  }
  UOp d = wmma(vectorize(fa), vectorize(fb), vectorize(zero));
  for (int64_t i = 0; i < 8; ++i) kb.store(c.at((half + 2 * i) * 16 + row), gep(d, i));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  CHECK(k.local() == std::vector<int64_t>{32});
  CHECK(k.isa().find("v_wmma_f32_16x16x16_f16") != std::string::npos);
  CHECK_THROWS_AS(wmma(vectorize(fa), vectorize(zero), vectorize(zero)), Error);
}

TEST_CASE("kernel builder: a WMMA in a workgroup of less than a wave is an Error on the CPU") {
  KernelBuilder kb;
  View c = kb.buffer(dtypes::float32, {8}), a = kb.buffer(dtypes::float16, {16});
  UOp lane = kb.local(16);
  std::vector<UOp> fa, zero(8, UOp::cnst(dtypes::float32, 0.0));
  for (int64_t j = 0; j < 16; ++j) fa.push_back(a(lane * 0 + j));
  UOp d = wmma(vectorize(fa), vectorize(fa), vectorize(zero));
  kb.store(c.at(lane % 8), gep(d, 0));
  std::string err;
  try {
    compile(kb.build(), kNoopt);
  } catch (const Error& e) {
    err = e.what();
  }
  CHECK(err.find("lowers WMMA for whole waves of 32 workitems, not a workgroup of 16") !=
        std::string::npos);
}

TEST_CASE("kernel builder: dot4 over a reduce, with the accumulator chained") {
  // int8 x int8 over words of 4 bytes (K/4 words per row)
  KernelBuilder kb;
  const int64_t rows = 128, K = 64;
  View out = kb.buffer(dtypes::int32, {rows}), w = kb.buffer(dtypes::int32, {rows * K / 4}),
       x = kb.buffer(dtypes::int32, {K / 4});
  UOp g = kb.global(rows / 32), l = kb.local(32), k4 = kb.reduce_range(K / 4);
  UOp r = g * 32 + l;
  const UOp zero = UOp::cnst_int(dtypes::int32, 0);
  const Dot4Arg signed_bytes{.a_signed = true, .b_signed = true};
  UOp part = dot4(w(r * (K / 4) + k4), x(k4), zero, signed_bytes);
  kb.store(out.at(r), reduce(part, Op::ADD, {k4}));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{4});
  CHECK(k.isa().find("v_dot4_i32_iu8") != std::string::npos);
  // acc + DOT4(a, b, 0) became DOT4(a, b, acc): no literal 0 accumulator is left
  CHECK(k.ks.src.find("call i32 @llvm.amdgcn.sudot4(i1 true, i32 %v") != std::string::npos);
  CHECK(k.ks.src.find("i32 0, i1 false)") == std::string::npos);
  // words are int32 (or uint32) scalars, the accumulator of their dtype
  const UOp byte = kb.buffer(dtypes::int8, {4})(UOp::cnst_int(dtypes::index, 0));
  CHECK_THROWS_AS(dot4(byte, byte, zero, signed_bytes), Error);
  CHECK_THROWS_AS(dot4(x(k4), x(k4), UOp::cnst_int(dtypes::uint32, 0), signed_bytes), Error);
}

TEST_CASE("kernel builder: views index row-major, [] fixes the first index, reshape keeps it") {
  // out[c][r] = in[r][c] + 10 * in3[r / 4][r % 4][c]: a transpose through 2-D and 3-D views.
  const int64_t rows = 8, cols = 16;
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {cols, rows}),
       in = kb.buffer(dtypes::float32, {rows, cols});
  View in3 = in.reshape({rows / 4, 4, cols});
  UOp r = kb.loop(rows), c = kb.loop(cols);
  // Written ((r / 4) * 4 + r % 4) * 16 + c, as a kernel would by hand.
  CHECK(in3.at(r.idiv(4), r % 4, c).index == (r.idiv(4) * 4 + r % 4) * cols + c);
  CHECK(in3[r.idiv(4)].at(r % 4, c).index == in3.at(r.idiv(4), r % 4, c).index);
  CHECK(out.at(c, 0).index == c * rows);  // a constant 0 last index adds nothing
  kb.store(out.at(c, r), in(r, c) + in3[r.idiv(4)](r % 4, c) * f32(10.0));
  Kernel cpu = compile(kb.build(), kNoopt);
  std::vector<float> x = randf(rows * cols, 3), y(rows * cols);
  cpu.run({y.data(), x.data()});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) REQUIRE(y[j * rows + i] == x[i * cols + j] * 11.0f);
  // Misuse names the problem.
  CHECK_THROWS_AS(in.at(r), Error);  // two dims, one index
  CHECK_THROWS_AS(in.reshape({rows, cols + 1}), Error);
  CHECK_THROWS_AS(in[r].reshape({cols}), Error);  // a sliced view does not reshape
  CHECK_THROWS_AS(in[r][c], Error);               // [] on one dim
}

TEST_CASE("kernel builder: list reductions fold in order, and UOps have bitwise operators") {
  const UOp a = f32(1.0), b = f32(2.0), c = f32(3.0);
  CHECK(sum({a, b, c}) == (a + b) + c);
  CHECK(maximum({a, b, c}) == a.max(b).max(c));
  CHECK(sum({a}) == a);
  CHECK_THROWS_AS(sum({}), Error);
  const UOp w = u32(0xF0);
  CHECK((w & 0x3C) == w.alu(Op::AND, u32(0x3C)));
  CHECK(((w >> 4) | (w << 2)) == w.alu(Op::SHR, u32(4)).alu(Op::OR, w.alu(Op::SHL, u32(2))));
  CHECK((w ^ w) == w.alu(Op::XOR, w));
}
