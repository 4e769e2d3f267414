// Lookups by a 4-bit value as one lane permute (lane_permute.h): which expressions become a
// permute, and that every result equals NOOPT's arithmetic.
#include <doctest/doctest.h>

#include <cmath>

#include "codegen/lower/lane_permute.h"
#include "kernel_harness.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

const bool kPermutes = cpu_codegen_target().has_lane_permute;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

UOp band(const UOp& b, int64_t mask) { return b.alu(Op::AND, i32(mask)); }

// y[n] = sum_k x[k] * level(n, k): a quantized matvec whose weight is some function of the byte
// w[n, k] and of per-32-block floats s[n, k/32], m[n, k/32].
template <typename Level>
UOp matvec_ast(int64_t N, int64_t K, Level level) {
  UOp y = buf(0, dtypes::float32, N), x = buf(1, dtypes::float32, K),
      w = buf(2, dtypes::uint8, N * K), s = buf(3, dtypes::float32, N * K / 32),
      m = buf(4, dtypes::float32, N * K / 32);
  UOp n = UOp::range(N, 0), k = UOp::range(K, 1, AxisType::Reduce);
  UOp byte = load(w, n * K + k).cast(dtypes::int32);
  UOp blk = n * (K / 32) + k.idiv(idx(32));
  return sink(
      {store(y, n, reduce(load(x, k) * level(byte, load(s, blk), load(m, blk)), Op::ADD, {k}))});
}

// Runs `ast` with the heuristic and with forced 16 lanes; both must equal NOOPT. Returns the
// heuristic kernel's source.
std::string check_against_noopt(const UOp& ast, int64_t N, int64_t K) {
  std::vector<float> x = randf(K, 61), s = randf(N * K / 32, 62), m = randf(N * K / 32, 63);
  std::vector<uint8_t> w(N * K);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t((i * 2654435761u) >> 13);
  std::vector<float> ref(N), got(N);
  compile(ast, {.noopt = 1}).run({ref.data(), x.data(), w.data(), s.data(), m.data()}, {}, 1);
  double scale = 0;
  for (float v : ref) scale = std::max(scale, double(std::fabs(v)));
  Kernel heuristic = compile(ast, {.max_threads = 2});
  Kernel sixteen = compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 16}}});
  for (Kernel* kern : {&heuristic, &sixteen}) {
    CAPTURE(kern->ks.opts_desc);
    kern->run({got.data(), x.data(), w.data(), s.data(), m.data()}, {}, 2);
    for (int64_t i = 0; i < N; ++i) {
      CAPTURE(i);
      CHECK(std::fabs(got[i] - ref[i]) <= 1e-5 * scale);
    }
  }
  return heuristic.ks.src;
}

}  // namespace

TEST_CASE("lane permute: a 4-bit quant's level s*q + m is a permute of 16 levels, = NOOPT") {
  const int64_t N = 48, K = 512;
  auto low = [](const UOp& b, const UOp& s, const UOp& m) {
    return band(b, 15).cast(dtypes::float32) * s + m;
  };
  auto high = [](const UOp& b, const UOp& s, const UOp& m) {
    return b.idiv(i32(16)).cast(dtypes::float32) * s + m;
  };
  for (auto level : {+low, +high}) {
    const std::string src = check_against_noopt(matvec_ast(N, K, level), N, K);
    // 32 lanes: two permutes per level, from the table's first 16 lanes
    CHECK((count(src, "call <16 x float> @llvm.x86.avx512.permvar.sf.512") > 0) == kPermutes);
    CHECK(count(src, "call <16 x float> @llvm.x86.avx512.permvar.sf.512") % 2 == 0);
  }
  // The permute reads the index's low four bits: the low nibble's `& 15` is gone.
  if (kPermutes)
    CHECK(count(check_against_noopt(matvec_ast(N, K, low), N, K), "and <32 x i32>") == 0);
}

TEST_CASE("lane permute: a select tree over a byte's low four bits (a codebook) is one permute") {
  const int64_t N = 32, K = 256;
  auto codebook = [](const UOp& b, const UOp& s, const UOp&) {
    std::vector<UOp> level;
    for (int v = 0; v < 16; ++v) level.push_back(UOp::cnst(dtypes::float32, v * v - 40.0));
    for (int bit = 0; bit < 4; ++bit) {
      UOp set = band(b, 1 << bit).ne(i32(0));
      std::vector<UOp> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(set.where(level[i + 1], level[i]));
      level = std::move(next);
    }
    return level[0] * s;
  };
  const UOp ast = matvec_ast(N, K, codebook);
  const std::string src = check_against_noopt(ast, N, K);
  CHECK((count(src, "permvar.sf.512") > 0) == kPermutes);
  // The four bit tests (b & 1, b & 2, ... of the raw byte) share one index, b & 15: one permute
  // per 16 lanes of bytes loaded, not one per select.
  const std::string lanes16 =
      compile(ast, {.opts = std::vector<Opt>{{OptType::Unroll, 1, 16}}}).ks.src;
  if (kPermutes)
    CHECK(count(lanes16, "call <16 x float> @llvm.x86.avx512.permvar") ==
          count(lanes16, "<16 x i8>, ptr"));
}

TEST_CASE("lane permute: five bits, or two 4-bit values combined, stay arithmetic") {
  const int64_t N = 16, K = 256;
  auto five_bits = [](const UOp& b, const UOp& s, const UOp& m) {
    return band(b, 31).cast(dtypes::float32) * s + m;
  };
  auto two_nibbles = [](const UOp& b, const UOp& s, const UOp& m) {
    return (band(b, 15) + b.idiv(i32(16))).cast(dtypes::float32) * s + m;
  };
  for (auto level : {+five_bits, +two_nibbles})
    CHECK(count(check_against_noopt(matvec_ast(N, K, level), N, K), "permvar") == 0);
}
