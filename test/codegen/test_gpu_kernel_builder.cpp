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
  UOp out = kb.buffer(dtypes::float32, 1024), in = kb.buffer(dtypes::float32, 1024);
  UOp g = kb.global(8), l = kb.local(128);
  UOp i = g * 128 + l;
  kb.store(out, i, kb.load(in, i) * UOp::cnst(dtypes::float32, 2.0));
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
  UOp out = kb.buffer(dtypes::float32, 4 * n), in = kb.buffer(dtypes::float32, 4 * n);
  UOp g = kb.global(4), l = kb.local(n);
  UOp tile = kb.lds(dtypes::float32, n);
  UOp st = KernelBuilder::lds_store(tile, l, kb.load(in, g * n + l));
  UOp shared = KernelBuilder::barrier(tile, {st});
  kb.store(out, g * n + l, kb.load(shared, l * -1 + (n - 1)));
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
  CHECK(!(kb2.lds(dtypes::float32, 64) == kb2.lds(dtypes::float32, 64)));
}

TEST_CASE("kernel builder: one WMMA tile per wave, hand-written") {
  // C[16x16] = A[16x16] * B[16x16] with A row-major, B column-major (both f16), one wave.
  KernelBuilder kb;
  UOp c = kb.buffer(dtypes::float32, 256), a = kb.buffer(dtypes::float16, 256),
      b = kb.buffer(dtypes::float16, 256);
  UOp lane = kb.local(32);
  UOp row = lane % 16, half = lane.idiv(16);
  std::vector<UOp> fa, fb, zero(8, UOp::cnst(dtypes::float32, 0.0));
  for (int64_t j = 0; j < 16; ++j) {
    fa.push_back(kb.load(a, row * 16 + j));
    fb.push_back(kb.load(b, row * 16 + j));
  }
  UOp d = KernelBuilder::wmma(KernelBuilder::vectorize(fa), KernelBuilder::vectorize(fb),
                              KernelBuilder::vectorize(zero));
  for (int64_t i = 0; i < 8; ++i) kb.store(c, (half + 2 * i) * 16 + row, KernelBuilder::gep(d, i));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  CHECK(k.local() == std::vector<int64_t>{32});
  CHECK(k.isa().find("v_wmma_f32_16x16x16_f16") != std::string::npos);
  CHECK_THROWS_AS(KernelBuilder::wmma(KernelBuilder::vectorize(fa), KernelBuilder::vectorize(zero),
                                      KernelBuilder::vectorize(zero)),
                  Error);
}

TEST_CASE("kernel builder: a WMMA in a workgroup of less than a wave is an Error on the CPU") {
  KernelBuilder kb;
  UOp c = kb.buffer(dtypes::float32, 8), a = kb.buffer(dtypes::float16, 16);
  UOp lane = kb.local(16);
  std::vector<UOp> fa, zero(8, UOp::cnst(dtypes::float32, 0.0));
  for (int64_t j = 0; j < 16; ++j) fa.push_back(kb.load(a, lane * 0 + j));
  UOp d = KernelBuilder::wmma(KernelBuilder::vectorize(fa), KernelBuilder::vectorize(fa),
                              KernelBuilder::vectorize(zero));
  kb.store(c, lane % 8, KernelBuilder::gep(d, 0));
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
  UOp out = kb.buffer(dtypes::int32, rows), w = kb.buffer(dtypes::int32, rows * K / 4),
      x = kb.buffer(dtypes::int32, K / 4);
  UOp g = kb.global(rows / 32), l = kb.local(32), k4 = kb.reduce_range(K / 4);
  UOp r = g * 32 + l;
  const UOp zero = UOp::cnst_int(dtypes::int32, 0);
  const Dot4Arg signed_bytes{.a_signed = true, .b_signed = true};
  UOp part = KernelBuilder::dot4(kb.load(w, r * (K / 4) + k4), kb.load(x, k4), zero, signed_bytes);
  kb.store(out, r, KernelBuilder::reduce(part, Op::ADD, {k4}));
  GpuKernel k = gpu_compile(kb.build(), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{4});
  CHECK(k.isa().find("v_dot4_i32_iu8") != std::string::npos);
  // acc + DOT4(a, b, 0) became DOT4(a, b, acc): no literal 0 accumulator is left
  CHECK(k.ks.src.find("call i32 @llvm.amdgcn.sudot4(i1 true, i32 %v") != std::string::npos);
  CHECK(k.ks.src.find("i32 0, i1 false)") == std::string::npos);
  // words are int32 (or uint32) scalars, the accumulator of their dtype
  const UOp byte = kb.load(kb.buffer(dtypes::int8, 4), UOp::cnst_int(dtypes::index, 0));
  CHECK_THROWS_AS(KernelBuilder::dot4(byte, byte, zero, signed_bytes), Error);
  CHECK_THROWS_AS(KernelBuilder::dot4(kb.load(x, k4), kb.load(x, k4),
                                      UOp::cnst_int(dtypes::uint32, 0), signed_bytes),
                  Error);
}
