// The int8-dot decode kernel (llm/kernels/matvec_int8.h) for every format it takes, at Qwen
// shapes, on the default device (CTest runs it again on DEV=AMD through the gfx1100 emulator):
// against a double sum over the reference dequantizer's weights times the very int8 levels and
// scales the device quantized x to.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <utility>

#include "base/error.h"
#include "llm/kernels/matvec_int8.h"
#include "test/llm/kernels/quant_matrix.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Normal activations (rows, in) quantized on the default device, and the values their levels
// stand for (scale * level), read back: the oracle's x.
std::pair<Int8Rows, std::vector<double>> int8_activations(int64_t rows, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xs(static_cast<size_t>(rows * in));
  for (float& v : xs) v = normal(rng);
  Int8Rows x = quantize_rows_int8(Tensor::from_vector(xs, {rows, in}));
  x.words.realize();
  x.scale = x.scale.contiguous().realize();
  const std::vector<int32_t> words = x.words.to_vector<int32_t>();
  const std::vector<float> scales = x.scale.to_vector<float>();
  std::vector<double> values(xs.size());
  for (size_t k = 0; k < xs.size(); ++k)
    values[k] = double(scales[k / kInt8Block]) * static_cast<int8_t>(words[k / 4] >> (8 * (k % 4)));
  return {x, values};
}

void check_matvec(GgmlType type, int64_t rows, int64_t out, int64_t in) {
  CAPTURE(format_of(type).name);
  CAPTURE(rows);
  CAPTURE(out);
  CAPTURE(in);
  const test::QuantMatrix w =
      test::random_quant_matrix(type, out, in, static_cast<uint32_t>(out + in + rows));
  const auto [x, levels] = int8_activations(rows, in, 11);
  test::check_product(matvec_int8(x, test::words_of(w.bytes), type, out, in).to_vector<float>(),
                      levels, w, rows, out, in, 2e-6, 1e-6);
}

}  // namespace

TEST_CASE("matvec_int8: every format at the Qwen shapes, 1 and 7 rows") {
  for (GgmlType type : test::kUnitTypes)
    for (auto [out, in] : {std::pair<int64_t, int64_t>{1024, 1024}, {3072, 1024}, {1024, 3072}})
      for (int64_t rows : {1, 7}) check_matvec(type, rows, out, in);
}

TEST_CASE("matvec_int8: ragged shapes (units past the last lane, outputs past the last wave)") {
  for (GgmlType type : test::kUnitTypes) check_matvec(type, 2, 6, 512);
  check_matvec(GgmlType::Q4_K, 1, 5, 256);
}

TEST_CASE("matvec_int8: rows that each take their own expert") {
  // 4 experts of (96, 512) in one tensor; 6 rows choosing experts 3, 0, 3, 1, 2, 0.
  const int64_t experts = 4, out = 96, in = 512, rows = 6;
  const std::vector<int32_t> ids{3, 0, 3, 1, 2, 0};
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
    CAPTURE(format_of(type).name);
    const test::QuantMatrix all = test::random_quant_matrix(type, experts * out, in, 17);
    const auto [x, values] = int8_activations(rows, in, 19);
    const std::vector<float> got = matvec_int8(x, test::words_of(all.bytes), type, out, in,
                                               Tensor::from_vector(ids, {rows}), experts)
                                       .to_vector<float>();
    REQUIRE(got.size() == static_cast<size_t>(rows * out));
    for (int64_t r = 0; r < rows; ++r) {  // row r against its expert alone
      test::QuantMatrix expert;
      expert.values.assign(all.values.begin() + ids[r] * out * in,
                           all.values.begin() + (ids[r] + 1) * out * in);
      test::check_product(
          std::vector<float>(got.begin() + r * out, got.begin() + (r + 1) * out),
          std::vector<double>(values.begin() + r * in, values.begin() + (r + 1) * in), expert, 1,
          out, in, 2e-6, 1e-6);
    }
  }
}

TEST_CASE("matvec_int8: what it does not take") {
  CHECK(!matvec_int8_needs(GgmlType::Q4_K, 64, 128));  // in not a multiple of 256
  CHECK(!matvec_int8_needs(GgmlType::Q6_K, 64, 256));  // rows of 210 bytes
  CHECK(!matvec_int8_needs(GgmlType::Q3_K, 64, 256));  // rows of 110 bytes
  CHECK(!matvec_int8_needs(GgmlType::Q8_0, 64, 224));  // in not a multiple of 256
  CHECK(matvec_int8_needs(GgmlType::Q6_K, 64, 512));
  CHECK(!matvec_int8_needs(GgmlType::F16, 64, 256));
  CHECK_THROWS_WITH_AS(matvec_int8_kernel(GgmlType::Q4_K, 1, 64, 128),
                       "matvec_int8: no int8 kernel for a Q4_K weight of (64, 128)", Error);
  CHECK_THROWS_WITH_AS(matvec_int8_kernel(GgmlType::Q4_K, 9, 64, 256),
                       "matvec_int8: 9 rows (1 to 8)", Error);
  CHECK_THROWS_WITH_AS(matvec_int8_kernel(GgmlType::Q4_K, 65, 64, 256, 8),
                       "matvec_int8: 65 rows (1 to 64)", Error);
}

// A suite label works only for a case whose name has no comma (doctest splits filters at commas).
TEST_SUITE("slow") {
  TEST_CASE("matvec_int8: the 151936x1024 output head in Q8_0 and Q6_K at 1 row") {
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q6_K}) check_matvec(type, 1, 151936, 1024);
  }
}
