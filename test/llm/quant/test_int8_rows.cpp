// Int8 activations (llm/quant/int8_rows.h) against a plain per-block rounding, and the Q4_K
// DOT4 linear (q4_k_linear_int8) against a double sum over the reference-dequantized weights and
// the same rounded activations.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/int8_rows.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/quantize.h"

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
    std::vector<float> scale = r.scale.to_vector<float>(), sum32 = r.sum32.to_vector<float>();
    REQUIRE(words.size() == size_t(rows * in / 4));
    for (size_t w = 0; w < words.size(); ++w)
      for (int j = 0; j < 4; ++j) {
        CAPTURE(w);
        CHECK(int(int8_t(uint32_t(words[w]) >> (8 * j))) == q[4 * w + j]);
      }
    REQUIRE(sum32.size() == size_t(rows * in / 32));
    for (size_t s = 0; s < sum32.size(); ++s) {
      int sum = 0;
      for (size_t i = 32 * s; i < 32 * s + 32; ++i) sum += q[i];
      CAPTURE(s);
      CHECK(sum32[s] == doctest::Approx(scales[s * 32 / kInt8Block] * float(sum)).epsilon(1e-6));
    }
    for (size_t b = 0; b < scales.size(); ++b) CHECK(scale[b] == doctest::Approx(scales[b]));
    std::vector<float> rounded = round_rows_int8(t).to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(i);
      CHECK(rounded[i] == doctest::Approx(scales[i / kInt8Block] * float(q[i])).epsilon(1e-6));
    }
  }
  CHECK_THROWS_WITH_AS(quantize_rows_int8(Tensor::zeros({1, 100})),
                       doctest::Contains("multiple of 32"), Error);
}

TEST_CASE("Q4_K DOT4 linear equals the dequantized weights times the rounded rows") {
  for (auto [out, in] : {std::pair<int64_t, int64_t>{48, 768}, {300, 256}, {8, 512}}) {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0, 0.1f);
    std::vector<float> w(out * in);
    for (float& v : w) v = normal(rng);
    std::vector<uint8_t> bytes(row_bytes(GgmlType::Q4_K, out * in));
    quantize(GgmlType::Q4_K, w, bytes);
    std::vector<float> deq(w.size());
    dequantize(GgmlType::Q4_K, bytes, deq);
    const auto n = static_cast<int64_t>(bytes.size());
    Tensor blocks = Tensor::from_host_memory(std::as_bytes(std::span(bytes)), {n}, dtypes::uint8,
                                             "CPU", nullptr);
    Tensor words = Tensor::from_host_memory(std::as_bytes(std::span(bytes)), {n / 4},
                                            dtypes::uint32, "CPU", nullptr);
    for (int64_t rows : {1, 2}) {
      CAPTURE(rows);
      CAPTURE(out);
      CAPTURE(in);
      std::vector<float> x = activations(rows, in, 7), scales;
      std::vector<int> q = levels(x, scales);
      Tensor xt = Tensor::from_vector(x, {rows, in});
      std::vector<float> got =
          q4_k_linear_int8(quantize_rows_int8(xt), blocks, words, out, in).to_vector<float>();
      std::vector<float> dense = round_rows_int8(xt)
                                     .linear(dequantize_lazy(blocks, GgmlType::Q4_K, {out, in}))
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
          CHECK(std::fabs(dense[r * out + o] - want) <= 1e-5 * mag + 1e-6);
        }
    }
    CHECK_THROWS_WITH_AS(q4_k_linear_int8(quantize_rows_int8(Tensor::zeros({1, in})), blocks,
                                          words.shrink({{0, 36}}), out, in),
                         doctest::Contains("uint32 words"), Error);
  }
}
