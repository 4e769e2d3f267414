// GPU kernels from ugrad's code generator run on the gfx1100 emulator (test/mockgpu, loaded as
// libmockhip.so through ugrad's HIP loader) and compared with the CPU path / C++ references:
// launch dims and guards, symbolic sizes, group reduce through LDS, WMMA tensor cores (the gfx11
// fragment layout), dot4, the f64 decompositions and hand-written LDS kernels (also run on the
// CPU).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "base/env.h"
#include "base/float16.h"
#include "codegen/kernel_builder.h"
#include "gpu_harness.h"
#include "kernel_harness.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/amd/hip_device.h"
#include "runtime/llvm_disasm.h"
#include "test/dot4_reference.h"
#include "test/mockgpu/mock_device.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

struct Mock : test::MockDevice {
  /// Compiles `ast` for gfx1100 and launches it with the sizes codegen chose.
  GpuKernel run(const UOp& ast, std::vector<uint64_t> bufs, std::vector<int64_t> vars = {},
                const CodegenOptions& opts = {}) {
    GpuKernel k = gpu_compile(ast, opts);
    auto module = dev->load_module(k.bin.code_object);
    std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
    std::vector<int64_t> g = k.global(vars), l = k.local();
    for (size_t d = 0; d < g.size(); ++d) grid[d] = uint32_t(g[d]), block[d] = uint32_t(l[d]);
    std::vector<uint64_t> scalars(vars.begin(), vars.end());
    std::vector<uint8_t> args = pack_kernargs(k.bin.info.kernel(k.ks.entry), bufs, scalars);
    dev->launch(module->function(k.ks.entry), grid, block, args);
    return k;
  }
};

std::vector<float> rnd(size_t n, uint32_t seed, float lo = -2, float hi = 2) {
  return randf(n, seed, lo, hi);
}

UOp var(const std::string& name, int64_t lo, int64_t hi) {
  return UOp::make(Op::PARAM, dtypes::index, {}, ParamArg{-1, name, lo, hi});
}

}  // namespace

TEST_CASE("emulated: odd 2d elementwise and a symbolic 1d size match the CPU") {
  Mock m;
  const int64_t R = 7, C = 333;
  UOp out = buf(0, dtypes::float32, R * C), a = buf(1, dtypes::float32, R * C),
      b = buf(2, dtypes::float32, C);
  UOp i = UOp::range(R, 0), j = UOp::range(C, 1);
  UOp ast = sink({store(out, i * C + j, load(a, i * C + j) * load(b, j) + 1.0f)});
  std::vector<float> x = rnd(R * C, 1), y = rnd(C, 2), want(R * C);
  compile(ast).run({want.data(), x.data(), y.data()});
  uint64_t po = m.upload(std::vector<float>(R * C, -7.0f));
  m.run(ast, {po, m.upload(x), m.upload(y)});
  CHECK(m.download<float>(po, R * C) == want);

  UOp n = var("n", 1, 5000);
  UOp o1 = buf(0, dtypes::float32, 5000), a1 = buf(1, dtypes::float32, 5000);
  UOp r = UOp::range(n, 0);
  UOp ast1 = sink({store(o1, r, load(a1, r).alu(Op::SQRT))});
  std::vector<float> src = rnd(5000, 3, 0, 9);
  for (int64_t nv : {1, 300, 4097}) {
    CAPTURE(nv);
    uint64_t p = m.upload(std::vector<float>(5000, -1.0f));
    m.run(ast1, {p, m.upload(src)}, {nv});
    std::vector<float> got = m.download<float>(p, 5000);
    for (int64_t q = 0; q < 5000; ++q)
      REQUIRE(got[q] == (q < nv ? doctest::Approx(std::sqrt(src[q])).epsilon(1e-6) : -1.0f));
  }
}

TEST_CASE("emulated: group reduce (sum, max) through LDS matches the CPU") {
  Mock m;
  for (Op op : {Op::ADD, Op::MAX}) {
    const int64_t rows = 3, K = 8192;
    UOp out = buf(0, dtypes::float32, rows), a = buf(1, dtypes::float32, rows * K);
    UOp i = UOp::range(rows, 0), r = UOp::range(K, 1, AxisType::Reduce);
    UOp ast = sink({store(out, i, reduce(load(a, i * K + r), op, {r}))});
    std::vector<float> x = rnd(rows * K, 4);
    uint64_t p = m.upload(std::vector<float>(rows));
    GpuKernel k = m.run(ast, {p, m.upload(x)});
    REQUIRE(k.ks.gpu_opts.size() == 1);
    std::vector<float> got = m.download<float>(p, rows);
    for (int64_t q = 0; q < rows; ++q) {
      double want = op == Op::ADD ? 0 : -INFINITY;
      for (int64_t t = 0; t < K; ++t)
        want = op == Op::ADD ? want + x[q * K + t] : std::max<double>(want, x[q * K + t]);
      CHECK(got[q] == doctest::Approx(want).epsilon(1e-4));
    }
  }
}

TEST_CASE("emulated: WMMA matmul (f16 and bf16 inputs) matches a double reference") {
  Mock m;
  for (DType in : {dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(to_string(in));
    const int64_t M = 32, N = 48, K = 64;
    std::vector<float> fa = rnd(M * K, 5), fb = rnd(K * N, 6);
    std::vector<uint16_t> ha(M * K), hb(K * N);
    auto enc = [&](float v) { return in == dtypes::float16 ? float_to_half(v) : float_to_bf16(v); };
    auto dec = [&](uint16_t v) {
      return in == dtypes::float16 ? half_to_float(v) : bf16_to_float(v);
    };
    for (size_t q = 0; q < ha.size(); ++q) ha[q] = enc(fa[q]);
    for (size_t q = 0; q < hb.size(); ++q) hb[q] = enc(fb[q]);
    UOp c = buf(0, dtypes::float32, M * N), a = buf(1, in, M * K), b = buf(2, in, K * N);
    UOp i = UOp::range(M, 0), j = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
    UOp prod = load(a, i * K + k).cast(dtypes::float32) * load(b, k * N + j).cast(dtypes::float32);
    UOp ast = sink({store(c, i * N + j, reduce(prod, Op::ADD, {k}))});
    uint64_t pc = m.upload(std::vector<float>(M * N));
    GpuKernel g = m.run(ast, {pc, m.upload(ha), m.upload(hb)});
    REQUIRE(g.ks.gpu_opts.size() == 1);
    std::vector<float> got = m.download<float>(pc, M * N);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t s = 0; s < N; ++s) {
        double want = 0;
        for (int64_t t = 0; t < K; ++t) want += double(dec(ha[r * K + t])) * dec(hb[t * N + s]);
        CAPTURE(r);
        CAPTURE(s);
        REQUIRE(got[r * N + s] == doctest::Approx(want).epsilon(1e-4).scale(1));
      }
  }
}

TEST_CASE("emulated: dot4 matvec (every int8/uint8 pairing) matches integer math") {
  Mock m;
  std::mt19937 rng(9);
  for (const Dot4Arg& s : all_dot4_signs()) {
    CAPTURE(arg_to_string(s));
    const DType ta = s.a_signed ? dtypes::int8 : dtypes::uint8;
    const DType tb = s.b_signed ? dtypes::int8 : dtypes::uint8;
    const int64_t rows = 40, K = 128;
    std::vector<uint8_t> w(rows * K), x(K);
    for (auto& v : w) v = uint8_t(rng());
    for (auto& v : x) v = uint8_t(rng());
    UOp out = buf(0, dtypes::int32, rows), pw = buf(1, ta, rows * K), px = buf(2, tb, K);
    UOp i = UOp::range(rows, 0), k = UOp::range(K, 1, AxisType::Reduce);
    UOp prod = load(pw, i * K + k).cast(dtypes::int32) * load(px, k).cast(dtypes::int32);
    UOp ast = sink({store(out, i, reduce(prod, Op::ADD, {k}))});
    uint64_t po = m.upload(std::vector<int32_t>(rows));
    GpuKernel g = m.run(ast, {po, m.upload(w), m.upload(x)});
    REQUIRE(g.ks.gpu_opts.size() == 1);
    std::vector<int32_t> got = m.download<int32_t>(po, rows);
    auto word = [](const uint8_t* bytes) {
      uint32_t v;
      std::memcpy(&v, bytes, 4);
      return v;
    };
    for (int64_t r = 0; r < rows; ++r) {
      int32_t want = 0;
      for (int64_t t = 0; t < K; t += 4)
        want = dot4_reference(word(&w[r * K + t]), word(&x[t]), want, s);
      CHECK(got[r] == want);
    }
  }
}

TEST_CASE("emulated: DOT4 of words (every signedness, an accumulator) is v_dot4 and matches") {
  Mock m;
  std::mt19937 rng(11);
  const int64_t n = 300;
  const std::vector<uint32_t> extremes = extreme_dot4_words();
  std::vector<uint32_t> x(n), y(n), z(n);
  for (auto* w : {&x, &y, &z})
    for (auto& v : *w) v = uint32_t(rng());
  for (size_t q = 0; q < extremes.size() * extremes.size(); ++q)  // every pair of extremes
    x[q] = extremes[q / extremes.size()], y[q] = extremes[q % extremes.size()];
  UOp out = buf(0, dtypes::int32, n), a = buf(1, dtypes::int32, n), b = buf(2, dtypes::int32, n),
      c = buf(3, dtypes::int32, n);
  UOp i = UOp::range(n, 0);
  for (const Dot4Arg& s : all_dot4_signs()) {
    CAPTURE(arg_to_string(s));
    uint64_t po = m.upload(std::vector<int32_t>(n));
    UOp dot = UOp::make(Op::DOT4, dtypes::int32, {load(a, i), load(b, i), load(c, i)}, s);
    GpuKernel g = m.run(sink({store(out, i, dot)}), {po, m.upload(x), m.upload(y), m.upload(z)});
    CHECK(disassemble_amdgpu(g.bin.code_object).find("v_dot4_i32_iu8") != std::string::npos);
    std::vector<int32_t> got = m.download<int32_t>(po, n);
    for (int64_t q = 0; q < n; ++q) {
      CAPTURE(q);
      CHECK(got[q] == dot4_reference(x[q], y[q], int32_t(z[q]), s));
    }
  }
}

TEST_CASE("emulated: f64 exp2/log2/sin decompositions on the GPU") {
  Mock m;
  const int64_t n = 300;
  std::vector<double> x(n);
  for (int64_t q = 0; q < n; ++q) x[q] = -40.0 + 0.27 * double(q);
  for (Op op : {Op::EXP2, Op::LOG2, Op::SIN}) {
    CAPTURE(op_name(op));
    UOp out = buf(0, dtypes::float64, n), a = buf(1, dtypes::float64, n);
    UOp i = UOp::range(n, 0);
    uint64_t po = m.upload(std::vector<double>(n));
    m.run(sink({store(out, i, load(a, i).alu(op))}), {po, m.upload(x)});
    std::vector<double> got = m.download<double>(po, n);
    for (int64_t q = 0; q < n; ++q) {
      const double want = op == Op::EXP2   ? std::exp2(x[q])
                          : op == Op::LOG2 ? std::log2(x[q])
                                           : std::sin(x[q]);
      CAPTURE(x[q]);
      if (std::isnan(want))
        CHECK(std::isnan(got[q]));
      else
        CHECK(got[q] == doctest::Approx(want).epsilon(1e-14).scale(1e-15));
    }
  }
}

namespace {

// out[g*n + t] = in[g*n + n-1-t]: each workgroup reverses its tile through LDS (one barrier).
UOp lds_reverse(int64_t n, int64_t groups) {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {groups * n}),
       in = kb.buffer(dtypes::float32, {groups * n});
  UOp g = kb.global(groups), l = kb.local(n);
  View tile = kb.lds(dtypes::float32, {n});
  View shared = barrier(tile, {lds_store(tile.at(l), in(g * n + l))});
  kb.store(out.at(g * n + l), shared(l * -1 + (n - 1)));
  return kb.build();
}

// out[g] = the sum of in[g*n, g*n + n) as a tree in one LDS array: log2(n) halving phases, each a
// gated write phase of the same array after the previous barrier.
UOp lds_tree_sum(int64_t n, int64_t groups) {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {groups}), in = kb.buffer(dtypes::float32, {groups * n});
  UOp g = kb.global(groups), l = kb.local(n);
  View tile = kb.lds(dtypes::float32, {n});
  View cur = barrier(tile, {lds_store(tile.at(l), in(g * n + l))});
  for (int64_t half = n / 2; half >= 1; half /= 2) {
    UOp active = l.lt(half);
    UOp sum = cur(l) + load(cur.at(l + half), active);
    cur = barrier(cur, {lds_store(cur.at(l), sum, active)});
  }
  kb.store(out.at(g), cur(idx(0)), l.eq(idx(0)));
  return kb.build();
}

// y = A x with x staged through LDS one tile of n per iteration of a reduce loop: the tile is
// rewritten every iteration, so the reads of one iteration end with a second barrier.
UOp lds_tiled_matvec(int64_t n, int64_t tiles, int64_t groups) {
  KernelBuilder kb;
  const int64_t rows = groups * n, cols = tiles * n;
  View y = kb.buffer(dtypes::float32, {rows}), a = kb.buffer(dtypes::float32, {rows * cols}),
       x = kb.buffer(dtypes::float32, {cols});
  UOp g = kb.global(groups), l = kb.local(n), k = kb.reduce_range(tiles), j = kb.reduce_range(n);
  View tile = kb.lds(dtypes::float32, {n});
  View xt = barrier(tile, {lds_store(tile.at(l), x(k * n + l))});
  UOp row = g * n + l;
  UOp part = reduce(a(row * cols + k * n + j) * xt(j), Op::ADD, {j});
  kb.store(y.at(row), reduce(barrier_after(part), Op::ADD, {k}));
  return kb.build();
}

// C_t = A_t B_t for t = 2g + w: one 16x16x16 WMMA tile per wave w of two in each of two
// workgroups (A_t row-major, B_t column-major, both `dt`).
UOp wmma_tiles(DType dt) {
  KernelBuilder kb;
  const int64_t tiles = 4, T = 256;
  View c = kb.buffer(dtypes::float32, {tiles * T}), a = kb.buffer(dt, {tiles * T}),
       b = kb.buffer(dt, {tiles * T});
  UOp g = kb.global(2), l = kb.local(64);
  UOp lane = l % 32, row = lane % 16, half = lane.idiv(16), t = g * 2 + l.idiv(32);
  std::vector<UOp> fa, fb, zero(8, UOp::cnst(dtypes::float32, 0.0));
  for (int64_t j = 0; j < 16; ++j) {
    fa.push_back(a(t * T + row * 16 + j));
    fb.push_back(b(t * T + row * 16 + j));
  }
  UOp d = wmma(vectorize(fa), vectorize(fb), vectorize(zero));
  for (int64_t i = 0; i < 8; ++i) kb.store(c.at(t * T + (half + 2 * i) * 16 + row), gep(d, i));
  return kb.build();
}

}  // namespace

TEST_CASE(
    "emulated: hand-written WMMA tiles (f16, bf16) on the CPU match the GPU and a reference") {
  Mock m;
  const int64_t n = 4 * 256;
  for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(to_string(dt));
    auto enc = [&](float v) { return dt == dtypes::float16 ? float_to_half(v) : float_to_bf16(v); };
    auto dec = [&](uint16_t v) {
      return dt == dtypes::float16 ? half_to_float(v) : bf16_to_float(v);
    };
    std::vector<float> af = rnd(n, 41), bf32 = rnd(n, 42);
    std::vector<uint16_t> a(n), b(n);
    for (int64_t q = 0; q < n; ++q) {  // the values as rounded to the input dtype
      a[q] = enc(af[q]), b[q] = enc(bf32[q]);
      af[q] = dec(a[q]), bf32[q] = dec(b[q]);
    }
    const UOp ast = wmma_tiles(dt);
    std::vector<float> cpu(n);
    compile(ast, {.noopt = 1}).run({cpu.data(), a.data(), b.data()});
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 16; ++j) {
          double want = 0;
          for (int64_t k = 0; k < 16; ++k)
            want += double(af[t * 256 + i * 16 + k]) * bf32[t * 256 + j * 16 + k];
          REQUIRE(cpu[t * 256 + i * 16 + j] == doctest::Approx(want).epsilon(1e-5).scale(1));
        }
    uint64_t po = m.upload(std::vector<float>(n));
    m.run(ast, {po, m.upload(a), m.upload(b)}, {}, {.noopt = 1});
    std::vector<float> gpu = m.download<float>(po, n);
    for (int64_t q = 0; q < n; ++q)
      REQUIRE(gpu[q] == doctest::Approx(cpu[q]).epsilon(1e-5).scale(1));
  }
}

// The hand-written LDS kernels run on the CPU (each phase a loop over the workitems, the cores
// taking whole workgroups: cpu_workgroups.h) and on the GPU from one source.
TEST_CASE("emulated: a hand-written LDS kernel reverses each workgroup's tile, as on the CPU") {
  Mock m;
  const int64_t n = 128, groups = 3;
  const UOp ast = lds_reverse(n, groups);
  std::vector<float> x = rnd(groups * n, 11), cpu(groups * n);
  Kernel k = compile(ast, {.noopt = 1, .max_threads = 4});
  CHECK(k.ks.cpu_threads == groups);
  k.run({cpu.data(), x.data()});
  for (int64_t q = 0; q < groups; ++q)
    for (int64_t t = 0; t < n; ++t) REQUIRE(cpu[q * n + t] == x[q * n + (n - 1 - t)]);
  uint64_t po = m.upload(std::vector<float>(groups * n));
  m.run(ast, {po, m.upload(x)}, {}, {.noopt = 1});
  CHECK(m.download<float>(po, groups * n) == cpu);
}

TEST_CASE("emulated: a workgroup tree sum in LDS (9 barriers, one array) matches the CPU") {
  Mock m;
  const int64_t n = 256, groups = 5;
  const UOp ast = lds_tree_sum(n, groups);
  std::vector<float> x = rnd(groups * n, 21), want(groups);
  for (int64_t q = 0; q < groups; ++q) {  // the same tree: the same float sums
    std::vector<float> v(x.begin() + q * n, x.begin() + (q + 1) * n);
    for (int64_t half = n / 2; half >= 1; half /= 2)
      for (int64_t t = 0; t < half; ++t) v[t] += v[t + half];
    want[q] = v[0];
  }
  Kernel k = compile(ast, {.noopt = 1, .max_threads = 4});
  CHECK(k.ks.cpu_threads == 4);
  for (int64_t cores : {1, 2, 4}) {  // any split of the workgroups over the cores
    CAPTURE(cores);
    std::vector<float> cpu(groups, -1.0f);
    k.run({cpu.data(), x.data()}, {}, cores);
    CHECK(cpu == want);
  }
  uint64_t po = m.upload(std::vector<float>(groups, -1.0f));
  GpuKernel gk = m.run(ast, {po, m.upload(x)}, {}, {.noopt = 1});
  CHECK(gk.isa().find("s_barrier") != std::string::npos);
  CHECK(m.download<float>(po, groups) == want);
}

TEST_CASE("emulated: an LDS tile rewritten every reduce iteration (two barriers) matches the CPU") {
  Mock m;
  const int64_t n = 32, tiles = 4, groups = 3, rows = groups * n, cols = tiles * n;
  const UOp ast = lds_tiled_matvec(n, tiles, groups);
  std::vector<float> a = rnd(rows * cols, 31), x = rnd(cols, 32), cpu(rows);
  compile(ast, {.noopt = 1}).run({cpu.data(), a.data(), x.data()});
  for (int64_t r = 0; r < rows; ++r) {
    double want = 0;
    for (int64_t c = 0; c < cols; ++c) want += double(a[r * cols + c]) * x[c];
    REQUIRE(cpu[r] == doctest::Approx(want).epsilon(1e-5));
  }
  uint64_t po = m.upload(std::vector<float>(rows));
  GpuKernel gk = m.run(ast, {po, m.upload(a), m.upload(x)}, {}, {.noopt = 1});
  std::vector<float> gpu = m.download<float>(po, rows);
  for (int64_t r = 0; r < rows; ++r) REQUIRE(gpu[r] == doctest::Approx(cpu[r]).epsilon(1e-5));
}

TEST_CASE("emulated: padded (gated) loads never touch memory outside the buffer") {
  Mock m;
  // out[i, j] = 1 <= i < 3 && j < 3 ? a[(i-1)*3 + j] : 0    (5 x 4 out of a 2 x 3 input)
  UOp out = buf(0, dtypes::float32, 20), a = buf(1, dtypes::float32, 6);
  UOp i = UOp::range(5, 0), j = UOp::range(4, 1);
  UOp valid = idx(0).lt(i).alu(Op::AND, i.lt(idx(3))).alu(Op::AND, j.lt(idx(3)));
  // The scheduler's form: the gated load under a WHERE on the same gate (regression: the symbolic
  // stage used the WHERE to drop the load's gate, reading a[-3..] on the GPU).
  UOp ld = load_gated(a, (i - 1) * 3 + j, valid);
  UOp ast = sink({store(out, i * 4 + j, valid.where(ld, UOp::cnst(dtypes::float32, 0.0)))});
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, want(20);
  compile(ast).run({want.data(), x.data()});
  uint64_t po = m.upload(std::vector<float>(20));
  GpuKernel k = m.run(ast, {po, m.upload(x)});
  INFO(k.ks.src);
  CHECK(m.download<float>(po, 20) == want);
}

TEST_CASE("emulated: the upcast elementwise kernel (b128 loads/stores) matches the CPU") {
  Mock m;
  const int64_t n = 1 << 16;
  UOp out = buf(0, dtypes::float32, n), a = buf(1, dtypes::float32, n);
  UOp i = UOp::range(n, 0);
  UOp sq = load(a, i) * load(a, i);
  UOp ast = sink({store(out, i, sq - sq.const_like(0.5))});
  std::vector<float> x = rnd(n, 12), want(n);
  compile(ast).run({want.data(), x.data()});
  uint64_t po = m.upload(std::vector<float>(n));
  GpuKernel k = m.run(ast, {po, m.upload(x)});
  CHECK(k.ks.gpu_opts.size() == 1);
  CHECK(m.download<float>(po, n) == want);
}

TEST_CASE("emulated: a group reduce nested in an outer reduce (LDS reused per iteration)") {
  Mock m;
  // out = sum_i max_j x[i, j], the inner max split across 64 lanes
  const int64_t I = 5, J = 1024;
  UOp out = buf(0, dtypes::float32, 1), a = buf(1, dtypes::float32, I * J);
  UOp i = UOp::range(I, 0, AxisType::Reduce), j = UOp::range(J, 1, AxisType::Reduce);
  UOp inner = reduce(load(a, i * J + j), Op::MAX, {j});
  UOp ast = sink({store(out, idx(0), reduce(inner, Op::ADD, {i}))});
  std::vector<float> x = rnd(I * J, 13), want(1);
  compile(ast, {.noopt = 1}).run({want.data(), x.data()});
  uint64_t po = m.upload(std::vector<float>(1));
  GpuKernel k = m.run(ast, {po, m.upload(x)}, {},
                      {.gpu_opts = std::vector<GpuOpt>{{GpuOptType::GroupReduce, 1, 64}}});
  CHECK(k.isa().find("s_barrier") != std::string::npos);
  CHECK(m.download<float>(po, 1)[0] == doctest::Approx(want[0]).epsilon(1e-6));
}
