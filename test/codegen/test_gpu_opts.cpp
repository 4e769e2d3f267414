// GPU optimizations on gfx1100: group reductions through LDS and tensor cores (WMMA), chosen by
// the heuristic or forced, checked in the IR, the code object metadata and the ISA.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "base/error.h"
#include "codegen/opt/gpu_opts.h"
#include "gpu_harness.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

UOp row_sum(int64_t rows, int64_t K, Op op = Op::ADD, DType t = dtypes::float32) {
  UOp out = buf(0, t, rows), a = buf(1, t, rows * K);
  UOp i = UOp::range(rows, 0), r = UOp::range(K, 1, AxisType::Reduce);
  return sink({store(out, i, reduce(load(a, i * K + r), op, {r}))});
}

UOp matmul(DType in, DType acc, int64_t M, int64_t N, int64_t K, bool cast = true) {
  UOp c = buf(0, acc, M * N), a = buf(1, in, M * K), b = buf(2, in, K * N);
  UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  UOp x = load(a, i * K + k), y = load(b, k * N + j);
  UOp prod = cast ? x.cast(acc) * y.cast(acc) : x * y;
  return sink({store(c, i * N + j, reduce(prod, Op::ADD, {k}))});
}

}  // namespace

TEST_CASE("group reduce: the heuristic splits a long reduce with few outputs across 256 lanes") {
  GpuKernel k = gpu_compile(row_sum(4, 4096));
  CHECK(k.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::GroupReduce, 1, 256}});
  CHECK(k.local() == std::vector<int64_t>{256, 1});
  CHECK(k.global() == std::vector<int64_t>{1, 4});
  CHECK(k.ks.src.find("addrspace(3) global [256 x float] undef") != std::string::npos);
  CHECK(k.ks.src.find("fence syncscope(\"workgroup\") release") != std::string::npos);
  CHECK(k.ks.src.find("fence syncscope(\"workgroup\") acquire") != std::string::npos);
  const std::string isa = k.isa();
  CHECK(isa.find("ds_store_b32") != std::string::npos);
  CHECK(isa.find("ds_load") != std::string::npos);
  CHECK(isa.find("s_barrier") != std::string::npos);
  CHECK(k.bin.info.kernel(k.ks.entry).group_segment_size >= 256 * 4);
}

TEST_CASE("group reduce: a matvec gets 64 lanes, outer-axis or short reduces stay per thread") {
  // matvec-shaped: 4096 outputs, contiguous reduce
  GpuKernel mv = gpu_compile(row_sum(4096, 4096));
  CHECK(mv.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::GroupReduce, 1, 64}});
  CHECK(mv.global() == std::vector<int64_t>{1, 4096});
  CHECK(gpu_compile(row_sum(1 << 17, 512)).ks.gpu_opts.empty());  // enough outputs
  CHECK(gpu_compile(row_sum(4, 100)).ks.gpu_opts.empty());        // short reduce
  // column sums: the reduce axis is the outer one (stride = row length)
  const int64_t R = 1024, C = 4096;
  UOp out = buf(0, dtypes::float32, C), a = buf(1, dtypes::float32, R * C);
  UOp j = UOp::range(C, 0), r = UOp::range(R, 1, AxisType::Reduce);
  CHECK(gpu_compile(sink({store(out, j, reduce(load(a, r * C + j), Op::ADD, {r}))}))
            .ks.gpu_opts.empty());
}

TEST_CASE("group reduce: forced on every reduce op and several dtypes, to a scalar too") {
  for (Op op : {Op::ADD, Op::MAX, Op::MUL})
    for (DType t : {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::float64}) {
      CAPTURE(op_name(op));
      CAPTURE(to_string(t));
      CodegenOptions o{.gpu_opts = std::vector<GpuOpt>{{GpuOptType::GroupReduce, 1, 64}}};
      GpuKernel k = gpu_compile(row_sum(3, 640, op, t), o);
      CHECK(k.local() == std::vector<int64_t>{64, 1});
      CHECK(k.isa().find("s_barrier") != std::string::npos);
    }
  UOp out = buf(0, dtypes::float32, 1), a = buf(1, dtypes::float32, 1 << 20);
  UOp r = UOp::range(1 << 20, 0, AxisType::Reduce);
  GpuKernel k = gpu_compile(sink({store(out, idx(0), reduce(load(a, r), Op::ADD, {r}))}));
  CHECK(k.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::GroupReduce, 0, 256}});
  CHECK(k.global() == std::vector<int64_t>{1});
}

TEST_CASE("group reduce: a bad amount is an Error") {
  CodegenOptions o{.gpu_opts = std::vector<GpuOpt>{{GpuOptType::GroupReduce, 1, 48}}};
  CHECK_THROWS_AS(gpu_compile(row_sum(3, 640), o), Error);
  CodegenOptions o2{.gpu_opts = std::vector<GpuOpt>{{GpuOptType::GroupReduce, 0, 4}}};
  CHECK_THROWS_AS(gpu_compile(row_sum(4, 640), o2), Error);
}

TEST_CASE("tensor cores: a f16 matmul becomes v_wmma_f32_16x16x16_f16") {
  GpuKernel k = gpu_compile(matmul(dtypes::float16, dtypes::float32, 64, 48, 256));
  CHECK(k.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::TensorCore, 2, 0}});
  CHECK(k.local() == std::vector<int64_t>{32, 1});
  CHECK(k.global() == std::vector<int64_t>{4, 3});
  CHECK(k.ks.src.find("llvm.amdgcn.wmma.f32.16x16x16.f16") != std::string::npos);
  const std::string isa = k.isa();
  CHECK(isa.find("v_wmma_f32_16x16x16_f16") != std::string::npos);
  // The accumulator is fused into the WMMA: no vector adds of its result in the loop.
  CHECK(k.ks.src.find("<8 x float> zeroinitializer") == std::string::npos);
}

TEST_CASE("tensor cores: bf16 inputs, f16 accumulation, and a batch axis") {
  GpuKernel b = gpu_compile(matmul(dtypes::bfloat16, dtypes::float32, 32, 32, 64));
  CHECK(b.isa().find("v_wmma_f32_16x16x16_bf16") != std::string::npos);
  GpuKernel h = gpu_compile(matmul(dtypes::float16, dtypes::float16, 32, 16, 32, false));
  CHECK(h.isa().find("v_wmma_f32_16x16x16_f16") != std::string::npos);
  // batched: C[b, i, j] = sum_k A[b, i, k] * B[b, k, j]
  const int64_t B = 3, M = 16, N = 32, K = 48;
  UOp c = buf(0, dtypes::float32, B * M * N), a = buf(1, dtypes::float16, B * M * K),
      w = buf(2, dtypes::float16, B * K * N);
  UOp bb = UOp::range(B, 0), i = UOp::range(M, 1), j = UOp::range(N, 2),
      k = UOp::range(K, 3, AxisType::Reduce);
  UOp prod = load(a, bb * (M * K) + i * K + k).cast(dtypes::float32) *
             load(w, bb * (K * N) + k * N + j).cast(dtypes::float32);
  GpuKernel g = gpu_compile(sink({store(c, bb * (M * N) + i * N + j, reduce(prod, Op::ADD, {k}))}));
  CHECK(g.ks.gpu_opts.size() == 1);
  CHECK(g.global() == std::vector<int64_t>{1, 2, 3});
  CHECK(g.isa().find("v_wmma_f32_16x16x16_f16") != std::string::npos);
}

TEST_CASE("tensor cores: ineligible matmuls are left alone") {
  CHECK(gpu_compile(matmul(dtypes::float32, dtypes::float32, 32, 32, 32)).ks.gpu_opts.empty());
  CHECK(gpu_compile(matmul(dtypes::float16, dtypes::float32, 32, 32, 24)).ks.gpu_opts.empty());
  CHECK(gpu_compile(matmul(dtypes::float16, dtypes::float32, 24, 32, 32)).ks.gpu_opts.empty());
  CodegenOptions o{.gpu_opts = std::vector<GpuOpt>{{GpuOptType::TensorCore, 2, 0}}};
  CHECK_THROWS_AS(gpu_compile(matmul(dtypes::float32, dtypes::float32, 32, 32, 32), o), Error);
}

TEST_CASE("dot4: int8 multiply-accumulate reductions become v_dot4_i32_iu8") {
  // One DOT4 op for every signedness: v_dot4_i32_iu8 with a sign bit per source (the call's i1s).
  struct Case {
    DType a, b, acc;
  };
  const Case cases[] = {
      {dtypes::int8, dtypes::int8, dtypes::int32},
      {dtypes::uint8, dtypes::uint8, dtypes::uint32},
      {dtypes::uint8, dtypes::int8, dtypes::int32},
      {dtypes::int8, dtypes::uint8, dtypes::int32},
  };
  for (const Case& c : cases) {
    CAPTURE(to_string(c.a));
    CAPTURE(to_string(c.b));
    const int64_t rows = 64, K = 256;
    UOp out = buf(0, c.acc, rows), w = buf(1, c.a, rows * K), x = buf(2, c.b, K);
    UOp i = UOp::range(rows, 0), k = UOp::range(K, 1, AxisType::Reduce);
    UOp prod = load(w, i * K + k).cast(c.acc) * load(x, k).cast(c.acc);
    GpuKernel g = gpu_compile(sink({store(out, i, reduce(prod, Op::ADD, {k}))}));
    CHECK(g.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::Dot4, 1, 4}});
    const size_t at = g.ks.src.find("call i32 @llvm.amdgcn.sudot4(");
    REQUIRE(at != std::string::npos);
    const std::string call = g.ks.src.substr(at, g.ks.src.find('\n', at) - at);
    CAPTURE(call);
    CHECK(call.find(fmt::format("(i1 {}, i32 %v", c.a == dtypes::int8)) != std::string::npos);
    CHECK(call.find(fmt::format(", i1 {}, i32 %v", c.b == dtypes::int8)) != std::string::npos);
    CHECK(call.find("i32 0, i1 false)") == std::string::npos);  // the accumulator fused in place
    CHECK(g.isa().find("v_dot4_i32_iu8") != std::string::npos);
  }
  // int32 x int32 is not an int8 dot product
  UOp out = buf(0, dtypes::int32, 4), w = buf(1, dtypes::int32, 4 * 64);
  UOp i = UOp::range(4, 0), k = UOp::range(64, 1, AxisType::Reduce);
  UOp prod = load(w, i * 64 + k) * load(w, k);
  CHECK(gpu_compile(sink({store(out, i, reduce(prod, Op::ADD, {k}))}), {.noopt = 0})
            .ks.gpu_opts.empty());
}

TEST_CASE("upcast: a large elementwise kernel computes 4 outputs per thread") {
  const int64_t n = 1 << 20;
  UOp out = buf(0, dtypes::float32, n), a = buf(1, dtypes::float32, n);
  UOp i = UOp::range(n, 0);
  GpuKernel k = gpu_compile(sink({store(out, i, load(a, i) * load(a, i))}));
  CHECK(k.ks.gpu_opts == std::vector<GpuOpt>{{GpuOptType::Upcast, 0, 4}});
  CHECK(k.global() == std::vector<int64_t>{1024});
  CHECK(k.local() == std::vector<int64_t>{256});
  const std::string isa = k.isa();
  CHECK(isa.find("global_load_b128") != std::string::npos);
  CHECK(isa.find("global_store_b128") != std::string::npos);
  // small or odd kernels keep one output per thread
  UOp o2 = buf(0, dtypes::float32, 1000), a2 = buf(1, dtypes::float32, 1000);
  UOp j = UOp::range(1000, 0);
  CHECK(gpu_compile(sink({store(o2, j, load(a2, j) + 1.0f)})).ks.gpu_opts.empty());
}

TEST_CASE("tensor cores: gfx12 (8-lane fragments) keeps the plain matmul, forcing it is an Error") {
  const CodegenTarget gfx12 = amd_codegen_target("gfx1200");
  UOp ast = matmul(dtypes::float16, dtypes::float32, 32, 32, 32);
  CHECK(codegen(ast, gfx12).gpu_opts.empty());
  CodegenOptions o{.gpu_opts = std::vector<GpuOpt>{{GpuOptType::TensorCore, 2, 0}}};
  CHECK_THROWS_AS(codegen(ast, gfx12, o), Error);
}
