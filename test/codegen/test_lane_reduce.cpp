// Vector lanes along a reduce axis (lane_reduce.h, the expander's lane axis, horizontal reduces):
// differential tests against NOOPT and host loops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "codegen/opt/lane_reduce.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// Occurrences of `what` in `s`.
size_t count(const std::string& s, const std::string& what) {
  size_t c = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; ++at) ++c;
  return c;
}

bool has_unroll(const std::vector<Opt>& opts, int64_t axis, int64_t amount) {
  return std::find(opts.begin(), opts.end(), Opt{OptType::Unroll, axis, amount}) != opts.end();
}

// y[m, n] = sum_k x[m, k] * w[n, k]: a linear layer against a row-major (out, in) weight.
UOp linear_ast(int64_t M, int64_t N, int64_t K) {
  UOp y = buf(0, dtypes::float32, M * N), x = buf(1, dtypes::float32, M * K),
      w = buf(2, dtypes::float32, N * K);
  UOp m = UOp::range(M, 0), n = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  return sink({store(y, m * N + n, reduce(load(x, m * K + k) * load(w, n * K + k), Op::ADD, {k}))});
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double rel) {
  double scale = 0;
  for (float v : want) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= rel * scale);
  }
}

}  // namespace

TEST_CASE("lane reduce: linear layers get lanes along k and copies of rows, equal to NOOPT") {
  struct Shape {
    int64_t M, N, K;
  };
  for (const Shape& shape :
       {Shape{1, 64, 1024}, Shape{32, 48, 256}, Shape{32, 16, 96}, Shape{3, 40, 64}}) {
    const int64_t M = shape.M, N = shape.N, K = shape.K;  // no lambda captures a binding
    CAPTURE(M);
    CAPTURE(K);
    UOp ast = linear_ast(M, N, K);
    std::vector<float> x = randf(M * K, 41), w = randf(N * K, 42), ref(M * N);
    compile(ast, {.noopt = 1}).run({ref.data(), x.data(), w.data()}, {}, 1);
    Kernel k = compile(ast, {.max_threads = 2}, avx512_width_target());
    CAPTURE(k.ks.opts_desc);
    // The lane count whose copies share the most wins, ties to the widest: 32 rows fit 16
    // accumulators of 16 lanes (4 x 4 copies) but only 8 of 32; a matvec has one accumulator.
    CHECK(has_unroll(k.ks.opts, 2, M == 32 ? 16 : 32));
    CHECK(has(k.ks.src, "llvm.vector.reduce.fadd"));
    CHECK_FALSE(has(k.ks.src, "masked.gather"));
    if (M == 32) CHECK(has(k.ks.opts_desc, "UPCAST(0,"));  // rows share each weight vector
    // Threads split the weight's rows (outermost), so each weight row is read once.
    if (k.ks.cpu_threads > 1) CHECK(has(k.ks.opts_desc, "THREAD(1,"));
    for (int64_t cores : {1, 2, 3}) {
      std::vector<float> y(M * N);
      k.run({y.data(), x.data(), w.data()}, {}, cores);
      check_close(y, ref, 1e-5);
    }
  }
}

TEST_CASE("lane reduce: a reduce as long as one lane vector takes it in one iteration") {
  // 16 values per output (a row of one pair of sub-blocks per lane in matmul_int8's layout): 16
  // lanes once, not 8 lanes twice.
  UOp ast = linear_ast(32, 48, 16);
  std::vector<float> x = randf(32 * 16, 43), w = randf(48 * 16, 44), ref(32 * 48), y(32 * 48);
  compile(ast, {.noopt = 1}).run({ref.data(), x.data(), w.data()}, {}, 1);
  Kernel k = compile(ast, {.max_threads = 2}, avx512_width_target());
  CAPTURE(k.ks.opts_desc);
  CHECK(has_unroll(k.ks.opts, 2, 16));
  CHECK_FALSE(has_unroll(k.ks.opts, 2, 8));
  k.run({y.data(), x.data(), w.data()}, {}, 2);
  check_close(y, ref, 1e-5);
}

TEST_CASE("lane reduce: threads split the outermost axis the weight depends on (heads of keys)") {
  // Attention's scores s[h, t] = sum_d q[h, d] * k[h, t, d]: threaded over t, each thread would
  // read H interleaved streams of keys (one per head); over h, whole heads one after another.
  constexpr int64_t H = 8, T = 512, D = 128;
  UOp s = buf(0, dtypes::float32, H * T), q = buf(1, dtypes::float32, H * D),
      keys = buf(2, dtypes::float32, H * T * D);
  UOp h = UOp::range(H, 0), t = UOp::range(T, 1), d = UOp::range(D, 2, AxisType::Reduce);
  UOp ast = sink({store(
      s, h * T + t, reduce(load(q, h * D + d) * load(keys, (h * T + t) * D + d), Op::ADD, {d}))});
  std::vector<float> vq = randf(H * D, 46), vk = randf(H * T * D, 47), ref(H * T);
  compile(ast, {.noopt = 1}).run({ref.data(), vq.data(), vk.data()}, {}, 1);
  const std::vector<Opt> opts = heuristic_opts(ast, cpu_codegen_target(), 2);
  CAPTURE(to_string(opts));
  CHECK(std::find(opts.begin(), opts.end(), Opt{OptType::Thread, 0, 2}) != opts.end());
  Kernel k = compile(ast, {.max_threads = 2});
  for (int64_t cores : {1, 2, 3}) {
    std::vector<float> got(H * T);
    k.run({got.data(), vq.data(), vk.data()}, {}, cores);
    check_close(got, ref, 1e-5);
  }
}

TEST_CASE("lane reduce: integer sums are bit-exact, MAX and MUL reduce across lanes") {
  const int64_t R = 12, C = 256;
  UOp i = UOp::range(R, 0), j = UOp::range(C, 1, AxisType::Reduce);
  {
    UOp out = buf(0, dtypes::int32, R), a = buf(1, dtypes::int32, R * C);
    UOp ast = sink({store(out, i, reduce(load(a, i * C + j) * load(a, j), Op::ADD, {j}))});
    std::vector<int32_t> va(R * C), got(R), want(R, 0);
    for (int64_t x = 0; x < R * C; ++x) va[x] = int32_t((x * 7919) % 1000 - 500);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) want[r] += va[r * C + c] * va[c];
    Kernel k = compile(ast);
    CAPTURE(k.ks.opts_desc);
    CHECK(has(k.ks.src, "llvm.vector.reduce.add"));
    k.run({got.data(), va.data()});
    CHECK(got == want);
  }
  for (Op op : {Op::MAX, Op::MUL}) {
    CAPTURE(op_name(op));
    UOp out = buf(0, dtypes::float32, R), a = buf(1, dtypes::float32, R * C);
    UOp ast = sink({store(out, i, reduce(load(a, i * C + j), op, {j}))});
    // Factors near 1 keep the product finite.
    std::vector<float> va =
        randf(R * C, 43, op == Op::MUL ? 0.9f : -5.f, op == Op::MUL ? 1.1f : 5.f);
    std::vector<float> ref(R), got(R);
    compile(ast, {.noopt = 1}).run({ref.data(), va.data()});
    Kernel k = compile(ast);
    CAPTURE(k.ks.opts_desc);
    CHECK(has_unroll(k.ks.opts, 1, 32));
    CHECK(has(k.ks.src, op == Op::MAX ? "llvm.vector.reduce.fmax" : "llvm.vector.reduce.fmul"));
    k.run({got.data(), va.data()});
    if (op == Op::MAX)
      CHECK(got == ref);
    else
      check_close(got, ref, 1e-5);
  }
}

TEST_CASE("lane reduce: a load gated once per lane group is one masked vector load") {
  // out[i] = sum_k ((k / 32) % 2 == 0 ? a[i*K + k] : 0) + b[k]: the gate changes per 32 elements
  const int64_t R = 4, K = 256;
  UOp out = buf(0, dtypes::float32, R), a = buf(1, dtypes::float32, R * K),
      b = buf(2, dtypes::float32, K);
  UOp i = UOp::range(R, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp even = (k.idiv(32) % 2).lt(idx(1));
  UOp ast =
      sink({store(out, i, reduce(load_gated(a, i * K + k, even) + load(b, k), Op::ADD, {k}))});
  std::vector<float> va = randf(R * K, 44), vb = randf(K, 45), want(R, 0), got(R);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < K; ++c) want[r] += ((c / 32) % 2 == 0 ? va[r * K + c] : 0) + vb[c];
  Kernel k32 = compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 32}}});
  CHECK(has(k32.ks.src, "llvm.masked.load"));
  CHECK_FALSE(has(k32.ks.src, "masked.gather"));
  k32.run({got.data(), va.data(), vb.data()});
  check_close(got, want, 1e-5);
  // The heuristic unrolls two groups per iteration instead: the gate folds to constants.
  Kernel h = compile(ast, {}, avx512_width_target());
  CAPTURE(h.ks.opts_desc);
  CHECK(has_unroll(h.ks.opts, 1, 2));
  CHECK_FALSE(has(h.ks.src, "llvm.masked.load"));
  h.run({got.data(), va.data(), vb.data()});
  check_close(got, want, 1e-5);
}

TEST_CASE("lane reduce: lane groups span a block when its index math then folds to constants") {
  // out[i] = sum_k a[i*K + k] * s[(k % 256) // 32]: a scale per 32 elements of a 256 block (as
  // Q6_K's sub-block scales). One group of 32 lanes is ungated but divides per group (k' % 8);
  // eight groups span the block and the scale index of each is a constant.
  const int64_t R = 4, K = 1024, kBlock = 256, kSub = 32;
  UOp out = buf(0, dtypes::float32, R), a = buf(1, dtypes::float32, R * K),
      s = buf(2, dtypes::float32, kBlock / kSub);
  UOp i = UOp::range(R, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp ast = sink(
      {store(out, i, reduce(load(a, i * K + k) * load(s, (k % kBlock).idiv(kSub)), Op::ADD, {k}))});
  std::vector<float> va = randf(R * K, 46), vs = randf(kBlock / kSub, 47), want(R, 0), got(R);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < K; ++c) want[r] += va[r * K + c] * vs[(c % kBlock) / kSub];
  Kernel h = compile(ast, {}, avx512_width_target());
  CAPTURE(h.ks.opts_desc);
  CHECK(has_unroll(h.ks.opts, 1, 32));
  CHECK(has_unroll(h.ks.opts, 1, 8));
  h.run({got.data(), va.data(), vs.data()});
  check_close(got, want, 1e-5);
  Kernel one = compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 32}}});
  one.run({got.data(), va.data(), vs.data()});
  check_close(got, want, 1e-5);
}

TEST_CASE("lane reduce: an unroll along strided loads stays copies, column sums are not lanes") {
  // out[j] = sum_i a[i*C + j]: the reduce axis strides through a
  const int64_t R = 64, C = 48;
  UOp out = buf(0, dtypes::float32, C), a = buf(1, dtypes::float32, R * C);
  UOp j = UOp::range(C, 0), i = UOp::range(R, 1, AxisType::Reduce);
  UOp ast = sink({store(out, j, reduce(load(a, i * C + j), Op::ADD, {i}))});
  CHECK_FALSE(lane_reduce_opts(ast, cpu_codegen_target()));
  std::vector<float> va = randf(R * C, 46), ref(C), got(C);
  compile(ast, {.noopt = 1}).run({ref.data(), va.data()});
  Kernel k = compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 8}}});
  CHECK_FALSE(has(k.ks.src, "llvm.vector.reduce"));
  k.run({got.data(), va.data()});
  check_close(got, ref, 1e-5);
}

TEST_CASE("lane reduce: two reduces over their own ranges (a gated FFN's gate and up) get lanes") {
  // y[m, n] = (sum_k x[m, k] * g[n, k]) * (sum_j x[m, j] * u[n, j])
  const int64_t M = 8, N = 24, K = 128;
  UOp y = buf(0, dtypes::float32, M * N), x = buf(1, dtypes::float32, M * K),
      g = buf(2, dtypes::float32, N * K), u = buf(3, dtypes::float32, N * K);
  UOp m = UOp::range(M, 0), n = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce),
      j = UOp::range(K, 3, AxisType::Reduce);
  UOp gate = reduce(load(x, m * K + k) * load(g, n * K + k), Op::ADD, {k});
  UOp up = reduce(load(x, m * K + j) * load(u, n * K + j), Op::ADD, {j});
  UOp ast = sink({store(y, m * N + n, gate * up)});
  std::vector<float> vx = randf(M * K, 47), vg = randf(N * K, 48), vu = randf(N * K, 49);
  std::vector<float> ref(M * N), got(M * N);
  compile(ast, {.noopt = 1}).run({ref.data(), vx.data(), vg.data(), vu.data()}, {}, 1);
  Kernel h = compile(ast, {.max_threads = 2}, avx512_width_target());
  CAPTURE(h.ks.opts_desc);
  CHECK((has_unroll(h.ks.opts, 2, 32) || has_unroll(h.ks.opts, 2, 16)));
  CHECK((has_unroll(h.ks.opts, 3, 32) || has_unroll(h.ks.opts, 3, 16)));
  CHECK_FALSE(has(h.ks.src, "masked.gather"));
  size_t reduces = 0;
  for (size_t at = h.ks.src.find("call reassoc float @llvm.vector.reduce.fadd");
       at != std::string::npos;
       at = h.ks.src.find("call reassoc float @llvm.vector.reduce.fadd", at + 1))
    ++reduces;
  CHECK(reduces >= 2);
  for (int64_t cores : {1, 2, 3}) {
    h.run({got.data(), vx.data(), vg.data(), vu.data()}, {}, cores);
    check_close(got, ref, 1e-5);
  }
}

TEST_CASE("lane reduce: a reduce unrolled whole (outer extent 1) and a lane-invariant term") {
  // out[i] = sum_k (a[i*K + k] + c[i]): c does not vary over the lanes, yet is summed K times
  const int64_t R = 6, K = 32;
  UOp out = buf(0, dtypes::float32, R), a = buf(1, dtypes::float32, R * K),
      c = buf(2, dtypes::float32, R);
  UOp i = UOp::range(R, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp ast = sink({store(out, i, reduce(load(a, i * K + k) + load(c, i), Op::ADD, {k}))});
  std::vector<float> va = randf(R * K, 50), vc = randf(R, 51), ref(R), got(R);
  compile(ast, {.noopt = 1}).run({ref.data(), va.data(), vc.data()});
  for (int64_t lanes : {32, 16}) {
    CAPTURE(lanes);
    Kernel k32 = compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, lanes}}});
    CHECK(has(k32.ks.src, "llvm.vector.reduce.fadd"));
    k32.run({got.data(), va.data(), vc.data()});
    check_close(got, ref, 1e-5);
  }
}

TEST_CASE("lane reduce: vector loads of ints and halves are prefetched ahead, f32 loads are not") {
  // An int8 weight streamed by a matvec: its loads prefetch prefetch_bytes ahead; the f32 x is
  // not prefetched, nor is anything in a float-only linear, while a half weight and int32 words
  // (packed quantized data) are. Prefetching changes no value.
  const int64_t N = 64, K = 1024;
  UOp y = buf(0, dtypes::float32, N), x = buf(1, dtypes::float32, K),
      w = buf(2, dtypes::int8, N * K);
  UOp n = UOp::range(N, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp ast = sink(
      {store(y, n, reduce(load(x, k) * load(w, n * K + k).cast(dtypes::float32), Op::ADD, {k}))});
  std::vector<float> xv = randf(K, 43), ref(N), got(N);
  std::vector<int8_t> wv(N * K);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = int8_t((i * 7919) % 255 - 127);
  compile(ast, {.noopt = 1}).run({ref.data(), xv.data(), wv.data()}, {}, 1);
  Kernel kern = compile(ast, {.max_threads = 2});
  const int64_t ahead = cpu_codegen_target().prefetch_bytes;
  REQUIRE(ahead > 0);

  CHECK(count(kern.ks.src, "call void @llvm.prefetch") >= 1);
  CHECK(count(kern.ks.src, "call void @llvm.prefetch") ==
        count(kern.ks.src, " x i8>, ptr"));  // one per byte vector load
  CHECK(has(kern.ks.src, "i64 " + std::to_string(ahead)));
  kern.run({got.data(), xv.data(), wv.data()}, {}, 2);
  check_close(got, ref, 1e-5);
  CHECK_FALSE(has(compile(linear_ast(1, 64, 1024), {.max_threads = 2}).ks.src, "llvm.prefetch"));
  UOp wh = buf(2, dtypes::float16, N * K);
  UOp half_ast = sink(
      {store(y, n, reduce(load(x, k) * load(wh, n * K + k).cast(dtypes::float32), Op::ADD, {k}))});
  const std::string half_src = compile(half_ast, {.max_threads = 2}).ks.src;
  CHECK(count(half_src, "call void @llvm.prefetch") >= 1);
  CHECK(count(half_src, "call void @llvm.prefetch") == count(half_src, " x half>, ptr"));
  UOp wi = buf(2, dtypes::int32, N * K);
  UOp int_ast = sink(
      {store(y, n, reduce(load(x, k) * load(wi, n * K + k).cast(dtypes::float32), Op::ADD, {k}))});
  const std::string int_src = compile(int_ast, {.max_threads = 2}).ks.src;
  CHECK(count(int_src, "call void @llvm.prefetch") >= 1);
  CHECK(count(int_src, "call void @llvm.prefetch") == count(int_src, " x i32>, ptr"));
}

TEST_CASE("lane reduce: a vector load every output reads alike is not prefetched") {
  // A matvec of int32 words by int32 words (packed int8 activations): the weight streams and is
  // prefetched; x's address moves with no output loop (each output re-reads it from the cache),
  // so its loads are not. A kernel with no output loop prefetches its only stream.
  const int64_t N = 64, K = 1024;
  UOp y = buf(0, dtypes::float32, N), x = buf(1, dtypes::int32, K),
      w = buf(2, dtypes::int32, N * K);
  UOp n = UOp::range(N, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp ast = sink(
      {store(y, n, reduce((load(x, k) * load(w, n * K + k)).cast(dtypes::float32), Op::ADD, {k}))});
  std::vector<int32_t> xv(K), wv(N * K);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = int32_t((i * 31) % 17) - 8;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = int32_t((i * 7919) % 255) - 127;
  std::vector<float> ref(N), got(N);
  compile(ast, {.noopt = 1}).run({ref.data(), xv.data(), wv.data()}, {}, 1);
  const std::vector<Opt> opts{{OptType::Unroll, 1, 32}, {OptType::Thread, 0, 2}};
  Kernel kern = compile(ast, {.opts = opts});
  const std::string& src = kern.ks.src;
  CHECK(count(src, " x i32>, ptr") == 2);
  CHECK(count(src, "call void @llvm.prefetch") == 1);
  kern.run({got.data(), xv.data(), wv.data()}, {}, 2);
  check_close(got, ref, 1e-5);
  UOp total = buf(0, dtypes::float32, 1), all = buf(1, dtypes::int32, N * K);
  UOp j = UOp::range(N * K, 0, AxisType::Reduce), zero = UOp::cnst_int(dtypes::index, 0);
  UOp one_sum =
      sink({store(total, zero, reduce(load(all, j).cast(dtypes::float32), Op::ADD, {j}))});
  const std::string sum_src =
      compile(one_sum, {.opts = std::vector<Opt>{{OptType::Unroll, 0, 32}}}).ks.src;
  CHECK(count(sum_src, "call void @llvm.prefetch") == 1);
}

TEST_CASE(
    "lane reduce: few accumulators take lane groups in 2 or 4 chains, a tile's take one each") {
  // 4 lane groups per iteration: one accumulator's chain of 4 multiply-adds becomes two of 2 (the
  // loop was latency-bound), 16 groups four of 4; 4 accumulators (rows of a tile) already have
  // independent chains.
  auto allocas = [](const std::string& src, const std::string& type) {
    size_t n = 0;
    for (size_t at = 0; (at = src.find("alloca " + type, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  struct Case {
    int64_t M;
    std::vector<Opt> opts;
    size_t accumulators;
    std::string type;
  };
  const std::vector<Case> cases{
      {1, {{OptType::Unroll, 2, 32}, {OptType::Unroll, 2, 4}}, 2, "<32 x float>"},
      {1, {{OptType::Unroll, 2, 16}, {OptType::Unroll, 2, 16}}, 4, "<16 x float>"},
      {4,
       {{OptType::Unroll, 2, 16}, {OptType::Unroll, 2, 4}, {OptType::Upcast, 0, 4}},
       4,
       "<16 x float>"}};
  for (const Case& c : cases) {
    const int64_t M = c.M, N = 32, K = 512;
    CAPTURE(M);
    UOp ast = linear_ast(M, N, K);
    std::vector<float> x = randf(M * K, 44), w = randf(N * K, 45), ref(M * N), got(M * N);
    compile(ast, {.noopt = 1}).run({ref.data(), x.data(), w.data()}, {}, 1);
    Kernel k = compile(ast, {.opts = c.opts});
    CHECK(allocas(k.ks.src, c.type) == c.accumulators);
    k.run({got.data(), x.data(), w.data()}, {}, 1);
    check_close(got, ref, 1e-5);
  }
}

TEST_CASE("lane reduce: a reduce over a symbolic length takes lanes with its last step masked") {
  // Attention's softmax over the positions so far: max and sum of a[h, t] for t < n. The row
  // holds kCap slots; past n they hold 1e30, which a read beyond the tail would bring in.
  constexpr int64_t H = 3, kCap = 100;
  UOp n = UOp::variable("n", 1, kCap);
  UOp mx = buf(0, dtypes::float32, H), sum = buf(1, dtypes::float32, H),
      a = buf(2, dtypes::float32, H * kCap);
  UOp h = UOp::range(H, 0), t = UOp::range(n, 1, AxisType::Reduce);
  UOp ast = sink({store(mx, h, reduce(load(a, h * kCap + t), Op::MAX, {t})),
                  store(sum, h, reduce(load(a, h * kCap + t), Op::ADD, {t}))});
  const int64_t lanes = cpu_codegen_target().simd_bytes / 4;
  Kernel k = compile(ast, {.max_threads = 2});
  CAPTURE(k.ks.opts_desc);
  CHECK(has_unroll(heuristic_opts(ast, cpu_codegen_target(), 2), 1, lanes));
  CHECK(has(k.ks.src, "masked.load"));
  CHECK_FALSE(has(k.ks.src, "gather"));
  for (int64_t len : {int64_t{1}, lanes - 1, lanes, lanes + 1, int64_t{77}, kCap}) {
    CAPTURE(len);
    std::vector<float> va(H * kCap, 1e30f);
    for (int64_t r = 0; r < H; ++r)
      for (int64_t x = 0; x < len; ++x) va[r * kCap + x] = float((x * 7 + r * 3) % 23) - 11.5f;
    std::vector<float> got_max(H), got_sum(H);
    k.run({got_max.data(), got_sum.data(), va.data()}, {len}, 2);
    for (int64_t r = 0; r < H; ++r) {
      float want_max = -INFINITY, want_sum = 0;
      for (int64_t x = 0; x < len; ++x)
        want_max = std::max(want_max, va[r * kCap + x]), want_sum += va[r * kCap + x];
      CHECK(got_max[r] == want_max);
      CHECK(got_sum[r] == want_sum);  // halves of integers: exact in any order
    }
  }
}

TEST_CASE("lane reduce: lane groups sharing a factor (a block's scale) multiply it once") {
  // y[n] = sum_k x[k] * w[n, k] * s[n, k / 64]: 4 groups of 16 lanes span a block, so their terms
  // share s: s * (x0 w0 + ... + x3 w3) is 5 multiplies where the terms alone take 8.
  const int64_t N = 24, K = 512;
  UOp y = buf(0, dtypes::float32, N), x = buf(1, dtypes::float32, K),
      w = buf(2, dtypes::float32, N * K), sc = buf(3, dtypes::float32, N * K / 64);
  UOp n = UOp::range(N, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp term = load(x, k) * load(w, n * K + k) * load(sc, n * (K / 64) + k.idiv(idx(64)));
  UOp ast = sink({store(y, n, reduce(term, Op::ADD, {k}))});
  std::vector<float> xv = randf(K, 46), wv = randf(N * K, 47), sv = randf(N * K / 64, 48);
  std::vector<float> ref(N), got(N);
  compile(ast, {.noopt = 1}).run({ref.data(), xv.data(), wv.data(), sv.data()}, {}, 1);
  Kernel kern =
      compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 16}, {OptType::Unroll, 1, 4}}});
  size_t muls = 0;
  for (size_t at = 0; (at = kern.ks.src.find("= fmul", at)) != std::string::npos; ++at) ++muls;
  CHECK(muls == 5);
  kern.run({got.data(), xv.data(), wv.data(), sv.data()}, {}, 1);
  check_close(got, ref, 1e-5);
}

namespace {

// y[m, n] = sum_k x[m, k] * deq(q[n, k]) * s[n, k / 32], deq(q) = float(q) (a cheap
// dequantization, as Q8_0's) or `extra` more ops on it (an expensive one, as the K formats').
UOp dequant_linear_ast(int64_t M, int64_t N, int64_t K, int extra) {
  UOp y = buf(0, dtypes::float32, M * N), x = buf(1, dtypes::float32, M * K),
      q = buf(2, dtypes::int8, N * K), sc = buf(3, dtypes::float32, N * K / 32);
  UOp m = UOp::range(M, 0), n = UOp::range(N, 1), k = UOp::range(K, 2, AxisType::Reduce);
  UOp w = load(q, n * K + k).cast(dtypes::float32);
  for (int i = 0; i < extra; ++i)
    w = w * UOp::cnst(dtypes::float32, 0.5) + UOp::cnst(dtypes::float32, 0.25 * (i + 1));
  UOp deq = w * load(sc, n * (K / 32) + k.idiv(idx(32)));
  return sink({store(y, m * N + n, reduce(load(x, m * K + k) * deq, Op::ADD, {k}))});
}

// `k` (compiled from dequant_linear_ast(M, N, K, ..)) on `cores` threads against NOOPT.
void check_dequant_linear(const UOp& ast, const Kernel& k, int64_t M, int64_t N, int64_t K,
                          int64_t cores) {
  std::vector<float> x = randf(M * K, 51), s = randf(N * K / 32, 52), ref(M * N), got(M * N);
  std::vector<int8_t> q(N * K);
  for (size_t i = 0; i < q.size(); ++i) q[i] = int8_t(int(i * 37 % 255) - 127);
  compile(ast, {.noopt = 1}).run({ref.data(), x.data(), q.data(), s.data()}, {}, 1);
  k.run({got.data(), x.data(), q.data(), s.data()}, {}, cores);
  check_close(got, ref, 1e-5);
}

}  // namespace

TEST_CASE("lane reduce: a cheap dequantization takes more output copies, an expensive more rows") {
  // Each copy of the rows reads a row of x, each copy of the outputs dequantizes a weight row: a
  // tile of 8 rows x 2 outputs reads x from L2 again for each pair of outputs, which only an
  // expensive dequantization is worth (Q8_0 ran 1.56x faster as 4 x 4, Q4_K 1.45x slower).
  constexpr int64_t M = 32, N = 64, K = 256;
  for (int extra : {0, 40}) {
    CAPTURE(extra);
    UOp ast = dequant_linear_ast(M, N, K, extra);
    Kernel k = compile(ast, {.max_threads = 2}, avx512_width_target());
    CAPTURE(k.ks.opts_desc);
    CHECK(has(k.ks.opts_desc, extra ? "UPCAST(0,8)" : "UPCAST(0,4)"));
    CHECK(has(k.ks.opts_desc, extra ? "UPCAST(1,2)" : "UPCAST(1,4)"));
    check_dequant_linear(ast, k, M, N, K, 2);
  }
}

TEST_CASE("lane reduce: a product the tile's rows share is not split to factor out its scale") {
  // The dequantized weight float(q) * s is computed once per output and lane group and read by
  // the 4 rows; factoring s out of each row's two lane groups, s * (x0 q0 + x1 q1), would take 3
  // multiplies per row and output (48) where the shared products take 8 and the rows 2 each (40).
  constexpr int64_t M = 4, N = 4, K = 256;
  UOp ast = dequant_linear_ast(M, N, K, 0);
  const std::vector<Opt> opts{{OptType::Unroll, 2, 16},
                              {OptType::Unroll, 2, 2},
                              {OptType::Upcast, 0, 4},
                              {OptType::Upcast, 1, 4}};
  Kernel k = compile(ast, {.opts = opts});
  CHECK(count(k.ks.src, "= fmul") == 40);
  check_dequant_linear(ast, k, M, N, K, 1);
}

TEST_CASE("lane reduce: a matvec's copies keep the vectors they share within the registers") {
  // y[n] = sum_k sum_j x[j, k] * w[n, j, k] over `loads` separate loads of x (matmul_int8's one row
  // reads x's 16 words of a pair apart). Every output copy shares x's vectors: 16 of 32 float32
  // lanes (two registers each) and the accumulators overflow AVX-512's 32 registers, so the copies
  // take 16 lanes; one such load leaves 32 lanes and their copies.
  constexpr int64_t N = 64, K = 64;
  for (int64_t loads : {1, 16}) {
    CAPTURE(loads);
    UOp y = buf(0, dtypes::float32, N), x = buf(1, dtypes::float32, loads * K),
        w = buf(2, dtypes::float32, N * loads * K);
    UOp n = UOp::range(N, 0), k = UOp::range(K, 1, AxisType::Reduce);
    UOp sum;
    for (int64_t j = 0; j < loads; ++j) {
      UOp term = load(x, j * K + k) * load(w, (n * loads + j) * K + k);
      sum = j ? sum + term : term;
    }
    UOp ast = sink({store(y, n, reduce(sum, Op::ADD, {k}))});
    std::vector<float> vx = randf(loads * K, 51), vw = randf(N * loads * K, 52), ref(N), got(N);
    compile(ast, {.noopt = 1}).run({ref.data(), vx.data(), vw.data()}, {}, 1);
    Kernel h = compile(ast, {.max_threads = 2}, avx512_width_target());
    CAPTURE(h.ks.opts_desc);
    CHECK(has_unroll(h.ks.opts, 1, loads == 1 ? 32 : 16));
    CHECK(has(h.ks.opts_desc, "UPCAST(0,"));
    h.run({got.data(), vx.data(), vw.data()}, {}, 2);
    check_close(got, ref, 1e-5);
  }
}
