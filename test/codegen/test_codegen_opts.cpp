// Differential tests: NOOPT vs the heuristic vs forced opts, 1 vs 2 cores.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/env.h"
#include "base/error.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

UOp matmul_ast(int M, int N, int K) {
  UOp c = buf(0, dtypes::float32, M * N), a = buf(1, dtypes::float32, M * K),
      b = buf(2, dtypes::float32, K * N);
  UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  return sink({store(c, i * N + j, reduce(load(a, i * K + k) * load(b, k * N + j), Op::ADD, {k}))});
}

std::vector<float> run_matmul(const UOp& ast, int M, int N, int K, const CodegenOptions& o,
                              int64_t cores) {
  Kernel k = compile(ast, o);
  std::vector<float> a = randf(M * K, 21), b = randf(K * N, 22), c(M * N);
  k.run({c.data(), a.data(), b.data()}, {}, cores);
  return c;
}

}  // namespace

TEST_CASE("opts: NOOPT, heuristic, forced tiles and threads agree on a matmul") {
  const int M = 64, N = 96, K = 128;
  UOp ast = matmul_ast(M, N, K);
  std::vector<float> ref = run_matmul(ast, M, N, K, {.noopt = 1}, 1);
  std::vector<std::vector<Opt>> forced{
      {{OptType::Upcast, 1, 16}},
      {{OptType::Upcast, 0, 4}, {OptType::Upcast, 1, 8}, {OptType::Unroll, 2, 4}},
      {{OptType::Thread, 0, 2}, {OptType::Upcast, 1, 4}},
      {{OptType::Upcast, 0, 4},
       {OptType::Upcast, 1, 16},
       {OptType::Pack, 0, 1},
       {OptType::Thread, 1, 3}},
  };
  for (int64_t cores : {1, 2, 3}) {
    CAPTURE(cores);
    std::vector<float> h = run_matmul(ast, M, N, K, {}, cores);
    for (size_t x = 0; x < ref.size(); ++x) CHECK(h[x] == doctest::Approx(ref[x]).epsilon(1e-5));
    for (const auto& opts : forced) {
      CAPTURE(to_string(opts));
      std::vector<float> f = run_matmul(ast, M, N, K, {.opts = opts}, cores);
      for (size_t x = 0; x < ref.size(); ++x) CHECK(f[x] == doctest::Approx(ref[x]).epsilon(1e-5));
    }
  }
}

TEST_CASE("a GEMM tile of few rows takes copies of its column vector, equal to NOOPT") {
  // Attention's weighted sum of values at decode: 2 query rows, 128 value columns, 300 keys.
  const int M = 2, N = 128, K = 300;
  UOp ast = matmul_ast(M, N, K);
  std::vector<float> ref = run_matmul(ast, M, N, K, {.noopt = 1}, 1);
  KernelSource ks = codegen(ast, cpu_codegen_target(), {.max_threads = 2});
  CAPTURE(ks.opts_desc);
  const int64_t lanes = cpu_codegen_target().simd_bytes / 4;
  // 2 rows x 2 registers of lanes x copies: half the vector registers hold accumulators
  const int64_t copies = vector_registers(cpu_codegen_target()) / 2 / (2 * 2);
  CHECK(ks.opts_desc.find(fmt::format("UPCAST(1,{}) UPCAST(1,{})", 2 * lanes, copies)) !=
        std::string::npos);
  for (int64_t cores : {1, 2}) {
    std::vector<float> h = run_matmul(ast, M, N, K, {.max_threads = 2}, cores);
    for (size_t x = 0; x < ref.size(); ++x) CHECK(h[x] == doctest::Approx(ref[x]).epsilon(1e-5));
  }
}

TEST_CASE("elementwise kernels get vector lanes where their loads stay contiguous") {
  // out[h, i] = x[h, i] * c[i % 64]: a RoPE table read per half, contiguous within 16 lanes.
  // out[i, h] = x[h, i] (a transpose) reads strided elements: no lanes.
  const int64_t H = 4, D = 128;
  UOp out = buf(0, dtypes::float32, H * D), x = buf(1, dtypes::float32, H * D),
      c = buf(2, dtypes::float32, 64);
  UOp h = UOp::range(H, 0), i = UOp::range(D, 1);
  UOp rope = sink(
      {store(out, h * D + i, load(x, h * D + i) * load(c, i % UOp::cnst_int(dtypes::index, 64)))});
  UOp transpose = sink({store(out, i * H + h, load(x, h * D + i))});
  // NEOX rotation: the first half reads -x[i + 64], the second x[i - 64]. The gates i < 64 and
  // 63 < i hold for all 16 lanes or none: masked vector loads, not gathers.
  UOp first = i.lt(idx(64)), second = idx(63).lt(i);
  UOp rotate = sink({store(
      out, h * D + i,
      first.where(-load_gated(x, h * D + i + 64, first), load_gated(x, h * D + i - 64, second)))});
  std::vector<float> xv = randf(H * D, 31), cv = randf(64, 32), ref(H * D), got(H * D);
  for (const UOp& ast : {rope, transpose, rotate}) {
    compile(ast, {.noopt = 1}).run({ref.data(), xv.data(), cv.data()}, {}, 1);
    Kernel k = compile(ast, {.max_threads = 2});
    CAPTURE(k.ks.opts_desc);
    CHECK((k.ks.opts_desc.find("UPCAST(1,") != std::string::npos) == (ast != transpose));
    CHECK(k.ks.src.find("gather") == std::string::npos);
    k.run({got.data(), xv.data(), cv.data()}, {}, 2);
    CHECK(got == ref);
  }
}

TEST_CASE("an elementwise kernel over a symbolic length takes lanes, its last step masked") {
  // out[h, t] = exp(a[h, t] - m[h]) for t < n (attention's softmax over the positions so far):
  // past n nothing is read or written (the sentinels stay).
  constexpr int64_t H = 3, kCap = 100;
  UOp n = UOp::variable("n", 1, kCap);
  UOp out = buf(0, dtypes::float32, H * kCap), a = buf(1, dtypes::float32, H * kCap),
      m = buf(2, dtypes::float32, H);
  UOp h = UOp::range(H, 0), t = UOp::range(n, 1);
  UOp ast = sink({store(out, h * kCap + t, (load(a, h * kCap + t) - load(m, h)).alu(Op::EXP2))});
  Kernel k = compile(ast, {.max_threads = 2});
  CAPTURE(k.ks.opts_desc);
  CHECK(k.ks.opts_desc.find("UPCAST(1,16)") != std::string::npos);
  CHECK(k.ks.src.find("masked.store") != std::string::npos);
  CHECK(k.ks.src.find("gather") == std::string::npos);
  Kernel ref = compile(ast, {.noopt = 1});
  std::vector<float> va = randf(H * kCap, 41), vm = randf(H, 42);
  for (int64_t len : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{77}, kCap}) {
    CAPTURE(len);
    std::vector<float> want(H * kCap, -7.0f), got(H * kCap, -7.0f);
    ref.run({want.data(), va.data(), vm.data()}, {len}, 1);
    k.run({got.data(), va.data(), vm.data()}, {len}, 2);
    for (int64_t r = 0; r < H; ++r)
      for (int64_t x = 0; x < kCap; ++x) {
        CAPTURE(x);
        if (x >= len)
          CHECK(got[r * kCap + x] == -7.0f);
        else
          CHECK(got[r * kCap + x] == doctest::Approx(want[r * kCap + x]).epsilon(1e-6));
      }
  }
}

TEST_CASE("threads: integer kernels are bit-exact on 1, 2 and 5 cores") {
  const int R = 100, C = 50;
  UOp out = buf(0, dtypes::int32, R), a = buf(1, dtypes::int32, R * C);
  UOp i = UOp::range(R, 0), j = UOp::range(C, 1, AxisType::Reduce);
  UOp ast = sink({store(out, i, reduce(load(a, i * C + j) * load(a, j), Op::ADD, {j}))});
  std::vector<int32_t> va(R * C);
  for (int x = 0; x < R * C; ++x) va[x] = (x * 7919) % 1000 - 500;
  std::vector<int32_t> ref(R);
  compile(ast, {.noopt = 1}).run({ref.data(), va.data()}, {}, 1);
  for (int x = 0; x < R; ++x) {
    int32_t acc = 0;
    for (int y = 0; y < C; ++y) acc += va[x * C + y] * va[y];
    CHECK(ref[x] == acc);
  }
  Kernel k =
      compile(ast, {.opts = std::vector<Opt>{{OptType::Thread, 0, 2}, {OptType::Unroll, 1, 5}}});
  for (int64_t cores : {1, 2, 5}) {
    std::vector<int32_t> got(R);
    k.run({got.data(), va.data()}, {}, cores);
    CHECK(got == ref);
  }
}

TEST_CASE("a bad opt is an error naming it") {
  UOp ast = matmul_ast(8, 8, 8);
  CHECK_THROWS_WITH_AS(
      codegen(ast, cpu_codegen_target(), {.opts = std::vector<Opt>{{OptType::Upcast, 1, 3}}}),
      doctest::Contains("UPCAST(1,3)"), Error);
  CHECK_THROWS_AS(
      codegen(ast, cpu_codegen_target(), {.opts = std::vector<Opt>{{OptType::Unroll, 0, 2}}}),
      Error);
}

TEST_CASE("threads: a full reduce broadcast into a threaded loop runs on every core") {
  // out[i] = a[i] - max_j a[j]: the max has no output loop, yet every core needs it
  const int N = 1000;
  UOp out = buf(0, dtypes::float32, N), a = buf(1, dtypes::float32, N);
  UOp i = UOp::range(N, 0), j = UOp::range(N, 1, AxisType::Reduce);
  UOp ast = sink({store(out, i, load(a, i) - reduce(load(a, j), Op::MAX, {j}))});
  Kernel k =
      compile(ast, {.opts = std::vector<Opt>{{OptType::Thread, 0, 2}, {OptType::Upcast, 0, 4}}});
  std::vector<float> va = randf(N, 31);
  const float m = *std::max_element(va.begin(), va.end());
  for (int64_t cores : {1, 2, 3}) {
    std::vector<float> vo(N);
    k.run({vo.data(), va.data()}, {}, cores);
    for (int x = 0; x < N; ++x) CHECK(vo[x] == va[x] - m);
  }
}

TEST_CASE("vector lanes: strided loads gather, gated loads are masked") {
  // out[i, j] = a[j, i] (transpose: the vector axis j strides through a), plus a padded read
  const int R = 8, C = 32;
  UOp out = buf(0, dtypes::float32, R * C), a = buf(1, dtypes::float32, C * R),
      p = buf(2, dtypes::float32, C - 4);
  UOp i = UOp::range(R, 0), j = UOp::range(C, 1);
  UOp valid = UOp(j.lt(4)).ne(UOp::cnst_bool(true));
  UOp ast = sink({store(out, i * C + j, load(a, j * R + i) + load_gated(p, j - 4, valid))});
  std::vector<float> va = randf(C * R, 32), vp = randf(C - 4, 33);
  for (const auto& opts : {std::vector<Opt>{{OptType::Upcast, 1, 16}},
                           std::vector<Opt>{{OptType::Upcast, 1, 8}, {OptType::Upcast, 0, 2}}}) {
    CAPTURE(to_string(opts));
    Kernel k = compile(ast, {.opts = opts});
    CHECK(k.ks.src.find("llvm.masked.gather") != std::string::npos);
    std::vector<float> vo(R * C);
    k.run({vo.data(), va.data(), vp.data()});
    for (int x = 0; x < R; ++x)
      for (int y = 0; y < C; ++y)
        CHECK(vo[x * C + y] == va[y * R + x] + (y >= 4 ? vp[y - 4] : 0.f));
  }
}

TEST_CASE("NOOPT=1 turns the heuristic off, the heuristic tiles a GEMM") {
  UOp ast = matmul_ast(256, 256, 256);
  {
    ScopedKnob noopt(Knob::NOOPT, "1");
    KernelSource ks = codegen(ast, cpu_codegen_target());
    CHECK(ks.opts.empty());
    CHECK(ks.cpu_threads == 1);
  }
  KernelSource ks = codegen(ast, cpu_codegen_target(), {.max_threads = 2});
  CAPTURE(ks.opts_desc);
  CHECK(ks.opts_desc.find("UPCAST(1,") != std::string::npos);
  CHECK(ks.opts_desc.find("PACK") != std::string::npos);
  CHECK(ks.cpu_threads == 2);
  // A tiny kernel is not worth a second core.
  CHECK(codegen(matmul_ast(8, 8, 8), cpu_codegen_target(), {.max_threads = 2}).cpu_threads == 1);
}

TEST_CASE("threads: an elementwise kernel gets a second core by its work, not its size alone") {
  // 64K elements: a plain add is not worth a second core, a SiLU-like chain of ops is.
  const int64_t n = 1 << 16;
  UOp o = buf(0, dtypes::float32, n), a = buf(1, dtypes::float32, n),
      b = buf(2, dtypes::float32, n);
  UOp i = UOp::range(n, 0);
  UOp x = load(a, i), y = load(b, i);
  UOp add = sink({store(o, i, x + y)});
  UOp silu = x * (UOp::cnst(dtypes::float32, 1.0) + (-x).alu(Op::EXP2)).alu(Op::RECIP);
  UOp heavy = sink({store(o, i, silu * y + x.alu(Op::SQRT))});
  CHECK(codegen(add, cpu_codegen_target(), {.max_threads = 2}).cpu_threads == 1);
  CHECK(codegen(heavy, cpu_codegen_target(), {.max_threads = 2}).cpu_threads == 2);
}

TEST_CASE("threads over a symbolic range split at run time") {
  // out[i] = a[i] * n for i < m, threaded over the variable-length axis
  UOp m = UOp::variable("m", 1, 64), nv = UOp::variable("n", 0, 9);
  UOp out = buf(0, dtypes::int64, 64), a = buf(1, dtypes::int64, 64);
  UOp i = UOp::range(m, 0);
  UOp ast = sink({store(out, i, load(a, i) * nv.cast(dtypes::int64))});
  Kernel k = compile(ast, {.opts = std::vector<Opt>{{OptType::Thread, 0, 2}}});
  std::vector<int64_t> va(64);
  for (int x = 0; x < 64; ++x) va[x] = x - 20;
  for (int64_t cores : {1, 2, 3})
    for (auto [mv, n] : {std::pair<int64_t, int64_t>{1, 3}, {2, 9}, {63, 7}}) {
      std::vector<int64_t> vo(64, -1);
      k.run({vo.data(), va.data()}, {mv, n}, cores);
      for (int x = 0; x < 64; ++x) CHECK(vo[x] == (x < mv ? va[x] * n : -1));
    }
}

TEST_CASE("threads: a store outside the threaded loop runs once") {
  // out0[i] = a[i] * 2 (threaded) and out1[0] = out1_init + sum a: core 0 alone does the second
  const int N = 300;
  UOp o0 = buf(0, dtypes::int32, N), o1 = buf(1, dtypes::int32, 1), a = buf(2, dtypes::int32, N);
  UOp i = UOp::range(N, 0), r = UOp::range(N, 1, AxisType::Reduce);
  UOp ast = sink({store(o0, i, load(a, i) * UOp::cnst_int(dtypes::int32, 2)),
                  store(o1, idx(0), load(o1, idx(0)) + reduce(load(a, r), Op::ADD, {r}))});
  Kernel k = compile(ast, {.opts = std::vector<Opt>{{OptType::Thread, 0, 3}}});
  std::vector<int32_t> va(N);
  for (int x = 0; x < N; ++x) va[x] = x % 17;
  const int32_t sum = std::accumulate(va.begin(), va.end(), 0);
  for (int64_t cores : {1, 2, 3}) {
    std::vector<int32_t> v0(N);
    int32_t v1 = 5;
    k.run({v0.data(), &v1, va.data()}, {}, cores);
    CHECK(v1 == 5 + sum);
    for (int x = 0; x < N; ++x) CHECK(v0[x] == 2 * va[x]);
  }
}
