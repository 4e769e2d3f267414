// GPU launch dims for gfx1100: output loops become workgroup/workitem ids, with guards where the
// local size does not divide a range, symbolic global sizes, and valid code objects.
#include <doctest/doctest.h>

#include "gpu_harness.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {
const CodegenOptions kNoopt{.noopt = 1};

UOp var(const std::string& name, int64_t lo, int64_t hi) {
  return UOp::make(Op::PARAM, dtypes::index, {}, ParamArg{-1, name, lo, hi});
}
}  // namespace

TEST_CASE("gpu dims: 1d elementwise, exact multiple of the local size") {
  UOp out = buf(0, dtypes::float32, 1024), a = buf(1, dtypes::float32, 1024);
  UOp i = UOp::range(1024, 0);
  GpuKernel k = gpu_compile(sink({store(out, i, load(a, i) * load(a, i))}), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{4});
  CHECK(k.local() == std::vector<int64_t>{256});
  CHECK(k.ks.src.find("llvm.amdgcn.workgroup.id.x") != std::string::npos);
  CHECK(k.ks.src.find("llvm.amdgcn.workitem.id.x") != std::string::npos);
  CHECK(k.ks.src.find("\"amdgpu-flat-work-group-size\"=\"1,256\"") != std::string::npos);
  CHECK(k.ks.src.find("br i1") == std::string::npos);  // no guard, no loop
  CHECK(k.isa().find("global_store_b32") != std::string::npos);
}

TEST_CASE("gpu dims: odd 1d size is guarded") {
  UOp out = buf(0, dtypes::float32, 1000), a = buf(1, dtypes::float32, 1000);
  UOp i = UOp::range(1000, 0);
  GpuKernel k = gpu_compile(sink({store(out, i, load(a, i) + 1.0f)}), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{4});
  CHECK(k.local() == std::vector<int64_t>{256});
  CHECK(k.ks.src.find("icmp slt i64") != std::string::npos);
  CHECK(k.isa().find("v_cmp") != std::string::npos);
}

TEST_CASE("gpu dims: tiny 1d kernel gets a small workgroup") {
  UOp out = buf(0, dtypes::int32, 3), a = buf(1, dtypes::int32, 3);
  UOp i = UOp::range(3, 0);
  GpuKernel k = gpu_compile(sink({store(out, i, load(a, i) * load(a, i))}), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{1});
  CHECK(k.local() == std::vector<int64_t>{4});
}

TEST_CASE("gpu dims: 2d and 3d odd sizes, innermost axis on x") {
  UOp out = buf(0, dtypes::float32, 7 * 33), a = buf(1, dtypes::float32, 7 * 33);
  UOp i = UOp::range(7, 0), j = UOp::range(33, 1);
  GpuKernel k = gpu_compile(sink({store(out, i * 33 + j, load(a, i * 33 + j) * 2.0f)}), kNoopt);
  CHECK(k.local() == std::vector<int64_t>{64, 4});
  CHECK(k.global() == std::vector<int64_t>{1, 2});
  CHECK(k.ks.src.find("llvm.amdgcn.workitem.id.y") != std::string::npos);

  UOp o3 = buf(0, dtypes::float16, 5 * 6 * 7), a3 = buf(1, dtypes::float16, 5 * 6 * 7);
  UOp x = UOp::range(5, 0), y = UOp::range(6, 1), z = UOp::range(7, 2);
  UOp at = x * 42 + y * 7 + z;
  GpuKernel k3 = gpu_compile(sink({store(o3, at, load(a3, at).alu(Op::SQRT))}), kNoopt);
  CHECK(k3.local() == std::vector<int64_t>{8, 8, 4});
  CHECK(k3.global() == std::vector<int64_t>{1, 1, 2});
  CHECK(k3.ks.src.find("llvm.amdgcn.workgroup.id.z") != std::string::npos);
}

TEST_CASE("gpu dims: 5 output axes are merged into 3 dims") {
  const int64_t n = 2 * 3 * 4 * 5 * 6;
  UOp out = buf(0, dtypes::int32, n), a = buf(1, dtypes::int32, n);
  std::vector<UOp> r;
  const int64_t ext[] = {2, 3, 4, 5, 6};
  UOp at = idx(0);
  for (int d = 0; d < 5; ++d) {
    r.push_back(UOp::range(ext[d], d));
    at = at * ext[d] + r.back();
  }
  GpuKernel k = gpu_compile(sink({store(out, at, load(a, at) + 7)}), kNoopt);
  CHECK(k.local() == std::vector<int64_t>{8, 8, 4});
  CHECK(k.global() == std::vector<int64_t>{1, 1, 6});
}

TEST_CASE("gpu dims: a huge y extent is folded into x") {
  const int64_t rows = 4000000, cols = 8;
  UOp out = buf(0, dtypes::float32, rows * cols), a = buf(1, dtypes::float32, rows * cols);
  UOp i = UOp::range(rows, 0), j = UOp::range(cols, 1);
  GpuKernel k = gpu_compile(sink({store(out, i * cols + j, load(a, i * cols + j))}), kNoopt);
  REQUIRE(k.global().size() == 1);
  CHECK(k.global()[0] * k.local()[0] >= rows * cols);
}

TEST_CASE("gpu dims: symbolic range end gives a symbolic global size") {
  UOp n = var("n", 1, 4096);
  UOp out = buf(0, dtypes::float32, 4096), a = buf(1, dtypes::float32, 4096);
  UOp i = UOp::range(n, 0);
  GpuKernel k = gpu_compile(sink({store(out, i, load(a, i) * 3.0f)}), kNoopt);
  CHECK(k.local() == std::vector<int64_t>{256});
  CHECK(k.global({1}) == std::vector<int64_t>{1});
  CHECK(k.global({256}) == std::vector<int64_t>{1});
  CHECK(k.global({257}) == std::vector<int64_t>{2});
  CHECK(k.global({4096}) == std::vector<int64_t>{16});
  CHECK(k.ks.src.find("i64 %var0") != std::string::npos);
}

TEST_CASE("gpu dims: reductions small and large run one output per thread") {
  for (int64_t K : {3, 4096}) {
    CAPTURE(K);
    UOp out = buf(0, dtypes::float32, 48), a = buf(1, dtypes::float32, 48 * K);
    UOp i = UOp::range(48, 0), r = UOp::range(K, 1, AxisType::Reduce);
    GpuKernel k =
        gpu_compile(sink({store(out, i, reduce(load(a, i * K + r), Op::ADD, {r}))}), kNoopt);
    CHECK(k.local() == std::vector<int64_t>{64});
    CHECK(k.global() == std::vector<int64_t>{1});
  }
}

TEST_CASE("gpu dims: a full reduce to a scalar") {
  UOp out = buf(0, dtypes::float32, 1), a = buf(1, dtypes::float32, 100);
  UOp r = UOp::range(100, 0, AxisType::Reduce);
  GpuKernel k = gpu_compile(sink({store(out, idx(0), reduce(load(a, r), Op::MAX, {r}))}), kNoopt);
  CHECK(k.global() == std::vector<int64_t>{1});
  CHECK(k.local() == std::vector<int64_t>{1});
}

TEST_CASE("gpu dims: a matmul (f32) compiles with 2d dims") {
  const int M = 64, N = 96, K = 40;
  UOp c = buf(0, dtypes::float32, M * N), a = buf(1, dtypes::float32, M * K),
      b = buf(2, dtypes::float32, K * N);
  UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  UOp prod = load(a, i * K + k) * load(b, k * N + j);
  GpuKernel g = gpu_compile(sink({store(c, i * N + j, reduce(prod, Op::ADD, {k}))}), kNoopt);
  CHECK(g.local() == std::vector<int64_t>{128, 2});
  CHECK(g.global() == std::vector<int64_t>{1, 32});
}
