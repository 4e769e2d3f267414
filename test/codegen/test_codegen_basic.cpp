// Hand-built kernel ASTs run on the CPU against naive C++ loops.
#include <doctest/doctest.h>

#include <cmath>

#include "kernel_harness.h"
#include "runtime/llvm_compile.h"
#include "runtime/llvm_target.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {
const CodegenOptions kNoopt{.noopt = 1};
}

TEST_CASE("elementwise 2d with a broadcast operand") {
  // out[i, j] = a[i, j] + b[j]   (4 x 16)
  UOp out = buf(0, dtypes::float32, 64), a = buf(1, dtypes::float32, 64),
      b = buf(2, dtypes::float32, 16);
  UOp i = UOp::range(4, 0), j = UOp::range(16, 1);
  UOp ast = sink({store(out, i * 16 + j, load(a, i * 16 + j) + load(b, j))});
  for (const CodegenOptions& o : {kNoopt, CodegenOptions{}}) {
    Kernel k = compile(ast, o);
    // NOOPT: one loop per axis; the heuristic gives the contiguous inner axis vector lanes
    CHECK(k.ks.name.rfind(o.noopt == 1 ? "E_4_16" : "E_4_2_8", 0) == 0);
    if (o.noopt != 1) CHECK(k.ks.src.find("load <8 x float>") != std::string::npos);
    std::vector<float> va = randf(64, 1), vb = randf(16, 2), vo(64);
    k.run({vo.data(), va.data(), vb.data()});
    for (int x = 0; x < 4; ++x)
      for (int y = 0; y < 16; ++y) CHECK(vo[x * 16 + y] == va[x * 16 + y] + vb[y]);
  }
}

TEST_CASE("elementwise 3d permute with div/mod index math") {
  // out[i, j, k] = a[k, i, j] * 2 over (3, 5, 7), a flat index through / and %
  UOp out = buf(0, dtypes::float32, 105), a = buf(1, dtypes::float32, 105);
  UOp r = UOp::range(105, 0);
  UOp i = r.idiv(35), j = (r % 35).idiv(7), k = r % 7;
  UOp ast = sink({store(out, r, load(a, k * 15 + i * 5 + j) * UOp::cnst(dtypes::float32, 2))});
  Kernel kern = compile(ast);
  std::vector<float> va = randf(105, 3), vo(105);
  kern.run({vo.data(), va.data()});
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 5; ++y)
      for (int z = 0; z < 7; ++z) CHECK(vo[x * 35 + y * 7 + z] == va[z * 15 + x * 5 + y] * 2);
}

TEST_CASE("padded load: the gate keeps the load in bounds and yields 0") {
  // out[i] = 2 <= i < 10 ? a[i - 2] : 0 for i in [0, 12); a has 8 elements
  UOp out = buf(0, dtypes::float32, 12), a = buf(1, dtypes::float32, 8);
  UOp i = UOp::range(12, 0);
  UOp valid = UOp(i.lt(2)).ne(UOp::cnst_bool(true)).alu(Op::AND, i.lt(10));
  UOp ast = sink({store(out, i, load_gated(a, i - 2, valid) + UOp::cnst(dtypes::float32, 1))});
  Kernel k = compile(ast);
  std::vector<float> va = randf(8, 4), vo(12);
  k.run({vo.data(), va.data()});
  for (int x = 0; x < 12; ++x) CHECK(vo[x] == (x >= 2 && x < 10 ? va[x - 2] : 0.f) + 1);
}

TEST_CASE("reductions over inner and outer axes: sum, max, prod") {
  const int R = 33, C = 24;
  UOp a = buf(1, dtypes::float32, R * C);
  std::vector<float> va = randf(R * C, 5, 0.5f, 1.5f);
  struct Case {
    Op op;
    bool inner;  // reduce over the contiguous axis (row sums) or the outer one (column sums)
  };
  for (Case c : {Case{Op::ADD, true}, Case{Op::ADD, false}, Case{Op::MAX, true},
                 Case{Op::MAX, false}, Case{Op::MUL, true}, Case{Op::MUL, false}}) {
    CAPTURE(op_name(c.op));
    CAPTURE(c.inner);
    const int n_out = c.inner ? R : C, n_red = c.inner ? C : R;
    UOp out = buf(0, dtypes::float32, n_out);
    UOp o = UOp::range(n_out, 0), r = UOp::range(n_red, 1, AxisType::Reduce);
    UOp src = c.inner ? load(a, o * C + r) : load(a, r * C + o);
    UOp ast = sink({store(out, o, reduce(src, c.op, {r}))});
    for (const CodegenOptions& opts : {kNoopt, CodegenOptions{}}) {
      Kernel k = compile(ast, opts);
      CHECK(k.ks.name[0] == 'r');
      std::vector<float> vo(n_out);
      k.run({vo.data(), va.data()});
      for (int x = 0; x < n_out; ++x) {
        double acc = c.op == Op::ADD ? 0 : c.op == Op::MUL ? 1 : -INFINITY;
        for (int y = 0; y < n_red; ++y) {
          double v = c.inner ? va[x * C + y] : va[y * C + x];
          acc = c.op == Op::ADD ? acc + v : c.op == Op::MUL ? acc * v : std::max(acc, v);
        }
        CHECK(vo[x] == doctest::Approx(acc).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("full reduction to a scalar and a reduce feeding an elementwise op") {
  // out[i] = a[i] - max_j a[j]  (softmax-like: reduce result broadcast in the same kernel)
  const int N = 100;
  UOp out = buf(0, dtypes::float32, N), a = buf(1, dtypes::float32, N);
  UOp i = UOp::range(N, 0), j = UOp::range(N, 1, AxisType::Reduce);
  UOp ast = sink({store(out, i, load(a, i) - reduce(load(a, j), Op::MAX, {j}))});
  Kernel k = compile(ast);
  std::vector<float> va = randf(N, 6), vo(N);
  k.run({vo.data(), va.data()});
  float m = *std::max_element(va.begin(), va.end());
  for (int x = 0; x < N; ++x) CHECK(vo[x] == va[x] - m);
}

TEST_CASE("mean and variance over one reduce range in one kernel") {
  // var[i] = sum_j (a[i,j] - mean[i])^2 / C with mean[i] = sum_j a[i,j] / C: two loops over j
  const int R = 20, C = 50;
  UOp out = buf(0, dtypes::float32, R), a = buf(1, dtypes::float32, R * C);
  UOp i = UOp::range(R, 0), j = UOp::range(C, 1, AxisType::Reduce);
  UOp inv = UOp::cnst(dtypes::float32, 1.0 / C);
  UOp mean = reduce(load(a, i * C + j), Op::ADD, {j}) * inv;
  UOp d = load(a, i * C + j) - mean;
  UOp ast = sink({store(out, i, reduce(d * d, Op::ADD, {j}) * inv)});
  std::vector<float> va = randf(R * C, 12);
  for (const CodegenOptions& opts : {kNoopt, CodegenOptions{}}) {
    Kernel k = compile(ast, opts);
    std::vector<float> vo(R);
    k.run({vo.data(), va.data()});
    for (int x = 0; x < R; ++x) {
      double m = 0, v = 0;
      for (int y = 0; y < C; ++y) m += va[x * C + y];
      m /= C;
      for (int y = 0; y < C; ++y) v += (va[x * C + y] - m) * (va[x * C + y] - m);
      CHECK(vo[x] == doctest::Approx(v / C).epsilon(1e-4));
    }
  }
}

TEST_CASE("a kernel without loops") {
  UOp out = buf(0, dtypes::int32, 2), a = buf(1, dtypes::int32, 1);
  UOp ast = sink({store(out, idx(1), load(a, idx(0)) * UOp::cnst_int(dtypes::int32, 3))});
  Kernel k = compile(ast);
  CHECK(k.ks.name.rfind("E", 0) == 0);
  int32_t vo[2] = {5, 5}, va = 7;
  k.run({vo, &va}, {}, 2);
  CHECK(vo[0] == 5);
  CHECK(vo[1] == 21);
}

TEST_CASE("matmul") {
  const int M = 24, N = 40, K = 36;
  UOp c = buf(0, dtypes::float32, M * N), a = buf(1, dtypes::float32, M * K),
      b = buf(2, dtypes::float32, K * N);
  UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  UOp ast =
      sink({store(c, i * N + j, reduce(load(a, i * K + k) * load(b, k * N + j), Op::ADD, {k}))});
  std::vector<float> va = randf(M * K, 7), vb = randf(K * N, 8);
  for (const CodegenOptions& opts : {kNoopt, CodegenOptions{}}) {
    Kernel kern = compile(ast, opts);
    std::vector<float> vc(M * N);
    kern.run({vc.data(), va.data(), vb.data()});
    for (int x = 0; x < M; ++x)
      for (int y = 0; y < N; ++y) {
        double acc = 0;
        for (int z = 0; z < K; ++z) acc += double(va[x * K + z]) * vb[z * N + y];
        CHECK(vc[x * N + y] == doctest::Approx(acc).epsilon(1e-5));
      }
  }
}

TEST_CASE("symbolic range ends over variables") {
  // out[i] = sum_{j < n} a[i * 16 + j] for i < m; m and n are variables
  UOp m = UOp::variable("m", 1, 8), n = UOp::variable("n", 1, 16);
  UOp out = buf(0, dtypes::float32, 8), a = buf(1, dtypes::float32, 128);
  UOp i = UOp::range(m, 0), j = UOp::range(n, 1, AxisType::Reduce);
  UOp scale = n.cast(dtypes::float32);
  UOp ast = sink({store(out, i, reduce(load(a, i * 16 + j), Op::ADD, {j}) * scale)});
  Kernel k = compile(ast);
  REQUIRE(k.ks.vars.size() == 2);
  CHECK(k.ks.vars[0].arg_as<ParamArg>().name == "m");
  std::vector<float> va = randf(128, 9);
  for (auto [mv, nv] : {std::pair<int, int>{3, 5}, {8, 16}, {1, 1}}) {
    std::vector<float> vo(8, -7.f);
    k.run({vo.data(), va.data()}, {mv, nv});
    for (int x = 0; x < 8; ++x) {
      if (x >= mv) {
        CHECK(vo[x] == -7.f);
        continue;
      }
      float acc = 0;
      for (int y = 0; y < nv; ++y) acc += va[x * 16 + y];
      CHECK(vo[x] == doctest::Approx(acc * nv).epsilon(1e-5));
    }
  }
}

TEST_CASE("multiple stores in one kernel") {
  UOp o0 = buf(0, dtypes::float32, 32), o1 = buf(1, dtypes::int32, 32),
      a = buf(2, dtypes::float32, 32);
  UOp i = UOp::range(32, 0);
  UOp x = load(a, i);
  UOp ast = sink({store(o0, i, x + UOp::cnst(dtypes::float32, 1)),
                  store(o1, i, (x * UOp::cnst(dtypes::float32, 10)).cast(dtypes::int32))});
  Kernel k = compile(ast);
  CHECK(k.ks.buffers.size() == 3);
  CHECK(k.ks.buffers[0].written);
  CHECK(k.ks.buffers[1].written);
  CHECK_FALSE(k.ks.buffers[2].written);
  std::vector<float> va = randf(32, 10), v0(32);
  std::vector<int32_t> v1(32);
  k.run({v0.data(), v1.data(), va.data()});
  for (int y = 0; y < 32; ++y) {
    CHECK(v0[y] == va[y] + 1);
    CHECK(v1[y] == int32_t(va[y] * 10.f));
  }
}

TEST_CASE("kernel names are deduplicated across different ASTs") {
  UOp o = buf(0, dtypes::float32, 8), a = buf(1, dtypes::float32, 8);
  UOp i = UOp::range(8, 0);
  KernelSource k1 = codegen(sink({store(o, i, load(a, i) + UOp::cnst(dtypes::float32, 1))}),
                            cpu_codegen_target(), kNoopt);
  KernelSource k2 = codegen(sink({store(o, i, load(a, i) + UOp::cnst(dtypes::float32, 2))}),
                            cpu_codegen_target(), kNoopt);
  KernelSource k3 = codegen(sink({store(o, i, load(a, i) + UOp::cnst(dtypes::float32, 1))}),
                            cpu_codegen_target(), kNoopt);
  CHECK(k1.name != k2.name);
  CHECK(k1.name == k3.name);
}

TEST_CASE("the same AST compiles for gfx1100") {
  const int M = 8, N = 16, K = 4;
  UOp c = buf(0, dtypes::float32, M * N), a = buf(1, dtypes::float32, M * K),
      b = buf(2, dtypes::float16, K * N);
  UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  UOp prod = load(a, i * K + k) * load(b, k * N + j).cast(dtypes::float32);
  UOp ast = sink({store(c, i * N + j, reduce(prod.alu(Op::EXP2), Op::ADD, {k}).alu(Op::SQRT))});
  KernelSource ks = codegen(ast, amd_codegen_target("gfx1100"));
  CHECK(ks.src.find("amdgpu_kernel") != std::string::npos);
  std::string isa = llvm_compile(amdgpu_target("gfx1100"), ks.src, LlvmOutput::Assembly, ks.name);
  CHECK(isa.find("global_store") != std::string::npos);
}

TEST_CASE("index math is int32 on GPUs when every value fits (else int64), int64 on CPUs") {
  auto gep_type = [](int64_t n, const CodegenTarget& target) {
    UOp o = buf(0, dtypes::float32, n), a = buf(1, dtypes::float32, n);
    UOp i = UOp::range(n, 0);
    KernelSource ks = codegen(sink({store(o, i, load(a, i))}), target, kNoopt);
    const std::string gep = "getelementptr inbounds float, ptr";
    const size_t at = ks.src.find(gep);
    REQUIRE(at != std::string::npos);
    return ks.src.find(", i32", at) == ks.src.find(',', at + gep.size()) ? 32 : 64;
  };
  CHECK(gep_type(1000, amd_codegen_target("gfx1100")) == 32);
  CHECK(gep_type(int64_t(3) << 31, amd_codegen_target("gfx1100")) == 64);
  CHECK(gep_type(1000, cpu_codegen_target()) == 64);  // folded into x86 addressing modes
}
