// Int8 activations (llm/quant/int8_rows.h) against a plain per-block rounding, and the DOT4
// linears (llm/quant/linear_int8.h) against a double sum over the reference-dequantized weights
// and the same rounded activations, and the packed GEMM (llm/quant/matmul_int8.h) alike.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "base/error.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/int8_rows.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/linear_int8.h"
#include "llm/quant/matmul_int8.h"
#include "llm/quant/quantize.h"
#include "runtime/jit.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Rows of normal values with a zero block, a block of one outlier and exact halves.
std::vector<float> activations(int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(rows * in);
  for (float& v : x) v = normal(rng);
  const auto n = static_cast<int64_t>(x.size());
  for (int64_t i = 0; i < 256; ++i) x[i] = 0;  // block 0: all zero
  for (int64_t i = 256; i < std::min<int64_t>(n, 512); ++i) x[i] = i == 300 ? -50.0f : 0.25f;
  for (int64_t i = 512; i < std::min<int64_t>(n, 768); ++i) x[i] = float(i - 640) / 2;  // halves
  return x;
}

// Per kInt8Block values: level = round(x * 127 / max|x|), halves away from zero.
std::vector<int> levels(const std::vector<float>& x, std::vector<float>& scales) {
  std::vector<int> q(x.size());
  for (size_t b = 0; b < x.size(); b += kInt8Block) {
    float amax = 0;
    for (size_t i = b; i < b + kInt8Block; ++i) amax = std::max(amax, std::fabs(x[i]));
    scales.push_back(amax / 127);
    const float inv = amax > 0 ? 127 / amax : 0;
    for (size_t i = b; i < b + kInt8Block; ++i) q[i] = int(std::round(x[i] * inv));
  }
  return q;
}

}  // namespace

TEST_CASE("int8 rows: levels, packed words, scales and sums of 32") {
  for (int64_t rows : {3, 4, 5, 32}) {
    const int64_t in = 1024;
    CAPTURE(rows);
    std::vector<float> x = activations(rows, in, 1), scales;
    std::vector<int> q = levels(x, scales);
    CHECK(q[300] == -127);
    CHECK(q[301] == 1);  // 0.25 * 127 / 50 = 0.635
    CHECK(q[512] == -127);
    CHECK(q[640] == 0);
    Tensor t = Tensor::from_vector(x, {rows, in});
    Int8Rows r = quantize_rows_int8(t);
    std::vector<int32_t> words = r.words.to_vector<int32_t>();
    std::vector<float> scale = r.scale.to_vector<float>();
    REQUIRE(words.size() == size_t(rows * in / 4));
    for (size_t w = 0; w < words.size(); ++w)
      for (int j = 0; j < 4; ++j) {
        CAPTURE(w);
        CHECK(int(int8_t(uint32_t(words[w]) >> (8 * j))) == q[4 * w + j]);
      }
    // sumN: the scale times the sum of each N consecutive levels.
    for (auto [per, sums] : {std::pair{size_t{16}, r.sum16}, {size_t{32}, r.sum32}}) {
      std::vector<float> got = sums.to_vector<float>();
      REQUIRE(got.size() == size_t(rows * in) / per);
      for (size_t s = 0; s < got.size(); ++s) {
        int sum = 0;
        for (size_t i = per * s; i < per * s + per; ++i) sum += q[i];
        CAPTURE(per);
        CAPTURE(s);
        CHECK(got[s] == doctest::Approx(scales[s * per / kInt8Block] * float(sum)).epsilon(1e-6));
      }
    }
    for (size_t b = 0; b < scales.size(); ++b) CHECK(scale[b] == doctest::Approx(scales[b]));
    const std::vector<float> scale16 = r.scale16.to_vector<float>();  // one per 16 values
    REQUIRE(scale16.size() == 2 * scales.size());
    for (size_t h = 0; h < scale16.size(); ++h) CHECK(scale16[h] == scale[h / 2]);
    std::vector<float> rounded = round_rows_int8(t).to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(i);
      CHECK(rounded[i] == doctest::Approx(scales[i / kInt8Block] * float(q[i])).epsilon(1e-6));
    }
  }
  CHECK_THROWS_WITH_AS(quantize_rows_int8(Tensor::zeros({1, 100})),
                       doctest::Contains("multiple of 32"), Error);
}

TEST_CASE("DOT4 linears equal the dequantized weights times the rounded rows") {
  struct Case {
    GgmlType type;
    int64_t out, in;
  };
  // linear_int8 reads Q4_K, Q5_K and IQ4_XS in pairs of blocks (512 inputs per group), Q6_K a
  // block at a time (256, 768: odd counts). Q4_K, Q6_K, IQ4_XS and Q8_0 (which has only this
  // form) from 512 inputs have the packed GEMM form (matmul_int8): 8 lanes at 512, 16 at 1024.
  for (Case c : {Case{GgmlType::Q4_K, 48, 1536},
                 {GgmlType::Q4_K, 300, 512},
                 {GgmlType::Q4_K, 36, 1024},
                 {GgmlType::Q5_K, 40, 1536},
                 {GgmlType::Q5_K, 8, 512},
                 {GgmlType::Q6_K, 48, 1536},
                 {GgmlType::Q6_K, 300, 512},
                 {GgmlType::Q6_K, 20, 256},
                 {GgmlType::Q6_K, 12, 768},
                 {GgmlType::IQ4_XS, 24, 1536},
                 {GgmlType::IQ4_XS, 20, 512},
                 {GgmlType::IQ4_XS, 36, 1024},
                 {GgmlType::Q8_0, 24, 1536},
                 {GgmlType::Q8_0, 20, 512},
                 {GgmlType::Q8_0, 36, 1024}}) {
    const auto [type, out, in] = c;
    CAPTURE(format_of(type).name);
    CAPTURE(out);
    CAPTURE(in);
    const bool matvec = linear_int8_supports(type, in), gemm = matmul_int8_supports(type, in);
    CHECK(matvec == (type != GgmlType::Q8_0));
    CHECK(gemm == (type != GgmlType::Q5_K && in % 512 == 0));
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0, 0.1f);
    std::vector<float> w(out * in);
    for (float& v : w) v = normal(rng);
    for (int64_t i = 0; i < in; ++i) w[i] = i % 7 == 0 ? -0.9f : 0.01f;  // a row of negative peaks
    std::vector<uint8_t> bytes(row_bytes(type, out * in));
    quantize(type, w, bytes);
    if (type == GgmlType::Q8_0) bytes[q8_0::kQs] = 0x80;  // -128, which its quantizer never writes
    std::vector<float> deq(w.size());
    dequantize(type, bytes, deq);
    // linear_int8 reads a reordered copy (the GEMM's packing takes the file's blocks).
    const std::span<const std::byte> file = std::as_bytes(std::span(bytes));
    Tensor blocks, words;
    if (matvec) {
      const std::shared_ptr<std::byte> reordered = reorder_linear_int8(type, file);
      const LinearInt8Layout& layout = linear_int8_layout(type);
      const std::span<const std::byte> read{reordered.get(),
                                            static_cast<size_t>(linear_int8_bytes(type, out, in))};
      CHECK(read.size() ==
            file.size() / (layout.blocks * format_of(type).block_bytes) * layout.bytes);
      const auto n_read = static_cast<int64_t>(read.size());
      blocks = Tensor::from_host_memory(read, {n_read}, dtypes::uint8, "CPU", reordered);
      words = Tensor::from_host_memory(read, {n_read / 4}, dtypes::uint32, "CPU", reordered);
    }
    const PackedInt8Weight packed =
        gemm ? pack_matmul_int8(type, file, out, in, "CPU") : PackedInt8Weight{};
    if (gemm)  // per 64 values: 8 words, 2 scales, 2 mins; Q6_K: 12 words, 4 scales; IQ4_XS: 8
               // words, 2 scales; Q8_0: 16 words, 2 scales
      CHECK(packed_bytes(type, out, in) == out * in / 64 *
                                               (type == GgmlType::Q4_K   ? 48
                                                : type == GgmlType::Q6_K ? 64
                                                : type == GgmlType::Q8_0 ? 72
                                                                         : 40));
    // One row and two through linear_int8 where it takes the weight; one, two and 33 through the
    // GEMM where it does.
    for (auto [rows, through_gemm] :
         {std::pair{1, false}, {2, false}, {1, true}, {2, true}, {33, true}}) {
      if (through_gemm ? !gemm : !matvec) continue;
      CAPTURE(rows);
      CAPTURE(through_gemm);
      std::vector<float> x = activations(rows, in, 7), scales;
      std::vector<int> q = levels(x, scales);
      const Tensor xt = Tensor::from_vector(x, {rows, in});
      std::vector<float> got =
          (through_gemm ? matmul_int8(quantize_pairs_int8(xt), packed)
                        : linear_int8(quantize_rows_int8(xt), type, blocks, words, out, in))
              .to_vector<float>();
      REQUIRE(got.size() == size_t(rows * out));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < in; ++i) {
            const double xi = double(scales[(r * in + i) / kInt8Block]) * q[r * in + i];
            want += double(deq[o * in + i]) * xi;
            mag += std::fabs(double(deq[o * in + i]) * xi);
          }
          CAPTURE(o);
          CHECK(std::fabs(got[r * out + o] - want) <= 1e-5 * mag + 1e-6);
        }
    }
    if (matvec)
      CHECK_THROWS_WITH_AS(linear_int8(quantize_rows_int8(Tensor::zeros({1, in})), type, blocks,
                                       words.shrink({{0, 36}}), out, in),
                           doctest::Contains("uint32 words"), Error);
  }
  CHECK(!linear_int8_supports(GgmlType::Q6_K, 128));
  CHECK(!linear_int8_supports(GgmlType::Q8_0, 256));
  CHECK(!linear_int8_supports(GgmlType::Q4_K, 256));  // its blocks pair up
  CHECK(!linear_int8_supports(GgmlType::Q5_K, 768));
  CHECK(!linear_int8_supports(GgmlType::IQ4_XS, 384));
  CHECK_THROWS_WITH_AS(
      linear_int8_x_words(quantize_rows_int8(Tensor::zeros({1, 768})), GgmlType::IQ4_XS),
      doctest::Contains("IQ4_XS reads x in runs of 512 values, x has 768 per row"), Error);
  CHECK_THROWS_WITH_AS(linear_int8_layout(GgmlType::Q8_0),
                       doctest::Contains("Q8_0 has no int8 form"), Error);
  CHECK_THROWS_WITH_AS(linear_int8(quantize_rows_int8(Tensor::zeros({1, 256})), GgmlType::Q4_K,
                                   Tensor::zeros({144}, dtypes::uint8), Tensor(), 1, 256),
                       doctest::Contains("Q4_K rows of 256 inputs have no int8 form"), Error);
  // The packed GEMM form: Q4_K and Q6_K rows of a multiple of 512, their blocks' bytes exactly.
  CHECK(!matmul_int8_supports(GgmlType::Q5_K, 512));
  const std::vector<std::byte> block(144);
  CHECK_THROWS_WITH_AS(pack_matmul_int8(GgmlType::Q4_K, block, 1, 256, "CPU"),
                       doctest::Contains("Q4_K (1, 256) has no packed int8 form"), Error);
  CHECK_THROWS_WITH_AS(pack_matmul_int8(GgmlType::Q4_K, block, 1, 512, "CPU"),
                       doctest::Contains("Q4_K (1, 512) needs 288 bytes, got 144"), Error);
  const PackedInt8Weight two =
      pack_matmul_int8(GgmlType::Q4_K, std::vector<std::byte>(288), 1, 512, "CPU");
  CHECK_THROWS_WITH_AS(matmul_int8(quantize_pairs_int8(Tensor::zeros({2, 1024})), two),
                       doctest::Contains("512 inputs, x has 16 pairs"), Error);
  CHECK_THROWS_WITH_AS(quantize_pairs_int8(Tensor::zeros({2, 96})),
                       doctest::Contains("a multiple of 64 values, got (2, 96)"), Error);
}

TEST_CASE("reordered copies: every element keeps its value, read as the header documents") {
  // Random blocks (d and dmin finite) through reorder_linear_int8; each element's value is
  // rebuilt from the copy by the layout in linear_int8.h and checked against the reference
  // dequantizer of the file's blocks. Three groups of blocks per type.
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
    CAPTURE(format_of(type).name);
    const LinearInt8Layout& f = linear_int8_layout(type);
    const size_t block = format_of(type).block_bytes, nblocks = 3 * f.blocks;
    std::mt19937 rng(3);
    std::vector<uint8_t> file(nblocks * block);
    for (uint8_t& b : file) b = uint8_t(rng());
    // The fp16 fields' high bytes (exponent below 31: finite): d and dmin lead a Q4_K/Q5_K/IQ4_XS
    // block, d ends a Q6_K one.
    for (size_t k = 0; k < nblocks; ++k)
      for (size_t at :
           type == GgmlType::Q6_K ? std::vector<size_t>{209} : std::vector<size_t>{1, 3})
        file[k * block + at] &= 0x7B;
    std::vector<float> want(nblocks * kQK_K);
    dequantize(type, file, want);
    const std::shared_ptr<std::byte> copy =
        reorder_linear_int8(type, std::as_bytes(std::span(file)));
    const auto* c = reinterpret_cast<const uint8_t*>(copy.get());
    const int64_t per_block = kLinearInt8Lanes / f.blocks, elements = 4 * f.steps;
    for (size_t k = 0; k < nblocks; ++k)
      for (int64_t e = 0; e < kQK_K; ++e) {
        const uint8_t* g = c + k / f.blocks * f.bytes;
        const int64_t m = int64_t(k % f.blocks), l = m * per_block + e / elements;
        const int64_t s = e % elements / 4, b = e % 4;
        const float d = half_to_float(uint16_t(g[f.d + 2 * m] | g[f.d + 2 * m + 1] << 8));
        const float dmin =
            f.has_mins ? half_to_float(uint16_t(g[f.dmin + 2 * m] | g[f.dmin + 2 * m + 1] << 8))
                       : 0;
        int level = (g[f.codes + 4 * (16 * (s / 2) + l) + b] >> (4 * (s % 2))) & 15;
        if (f.high_bits)
          level |= ((g[f.high + 4 * l + b] >> (f.high_bits * s)) & ((1 << f.high_bits) - 1)) << 4;
        const double q = type == GgmlType::IQ4_XS ? kIQ4NLValues[level] : level - f.offset;
        const double scaled = double(d) * int8_t(g[f.scales + l]) * q;
        const double min = f.has_mins ? double(dmin) * int8_t(g[f.mins + l]) : 0;
        CAPTURE(k);
        CAPTURE(e);
        CHECK(std::fabs(scaled - min - want[k * kQK_K + e]) <=
              1e-6 * (std::fabs(scaled) + std::fabs(min)));
      }
    const size_t odd = f.blocks == 2 ? 3 * block : block + 2;  // an odd block, a torn one
    const std::string whole = fmt::format("{} bytes are not whole groups of {} {} block(s) of {}",
                                          odd, f.blocks, format_of(type).name, block);
    CHECK_THROWS_WITH_AS(reorder_linear_int8(type, std::vector<std::byte>(odd)),
                         doctest::Contains(whole.c_str()), Error);
  }
}
