// The int8-dot decode kernel (llm/kernels/matvec_int8.h) for every format it takes, at Qwen
// shapes, on the default device (CTest runs it again on DEV=AMD through the gfx1100 emulator):
// against a double sum over the reference dequantizer's weights times the very int8 levels and
// scales the device quantized x to.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "llm/kernels/matvec_int8.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/quantize.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

struct Weight {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // the reference dequantization
};

Weight random_weight(GgmlType type, int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Weight w;
  std::vector<float> src(static_cast<size_t>(out * in));
  // Rows of different magnitudes, with an outlier now and then (as real weights have).
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k)
      src[r * in + k] = normal(rng) * (0.02f + 0.01f * float(r % 7)) * (k % 97 == 0 ? 8.0f : 1.0f);
  w.bytes.assign(row_bytes(type, in) * out, 0);
  quantize(type, src, w.bytes);
  w.values.resize(src.size());
  dequantize(type, w.bytes, w.values);
  return w;
}

// The weight's bytes as uint32 words on the default device.
Tensor words_of(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> words((bytes.size() + 3) / 4, 0);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return Tensor::from_vector(words, {static_cast<int64_t>(words.size())}, dtypes::uint32);
}

void check_matvec(GgmlType type, int64_t rows, int64_t out, int64_t in) {
  CAPTURE(format_of(type).name);
  CAPTURE(rows);
  CAPTURE(out);
  CAPTURE(in);
  const Weight w = random_weight(type, out, in, static_cast<uint32_t>(out + in + rows));
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xs(static_cast<size_t>(rows * in));
  for (float& v : xs) v = normal(rng);
  Int8Rows x = quantize_rows_int8(Tensor::from_vector(xs, {rows, in}));
  x.words.realize();
  Tensor scale = x.scale.contiguous().realize();
  const std::vector<int32_t> words = x.words.to_vector<int32_t>();
  const std::vector<float> scales = scale.to_vector<float>();
  const std::vector<float> got = matvec_int8(x, words_of(w.bytes), type, out, in).to_vector<float>();
  REQUIRE(got.size() == static_cast<size_t>(rows * out));
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < in; ++k) {
        const auto level = static_cast<int8_t>(words[(r * in + k) / 4] >> (8 * (k % 4)));
        const double xv = double(scales[(r * in + k) / kInt8Block]) * level;
        want += double(w.values[o * in + k]) * xv;
        mag += std::fabs(double(w.values[o * in + k]) * xv);
      }
      const double g = got[r * out + o];
      if (!(std::fabs(g - want) <= 2e-6 * mag + 1e-6) && bad++ < 5)
        FAIL_CHECK("row " << r << " out " << o << ": got " << g << ", want " << want
                          << " (sum of |terms| " << mag << ")");
    }
  CHECK(bad == 0);
}

constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                               GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS};

}  // namespace

TEST_CASE("matvec_int8: every format at the Qwen shapes, 1 and 7 rows") {
  for (GgmlType type : kTypes)
    for (auto [out, in] : {std::pair<int64_t, int64_t>{1024, 1024}, {3072, 1024}, {1024, 3072}})
      for (int64_t rows : {1, 7}) check_matvec(type, rows, out, in);
}

TEST_CASE("matvec_int8: ragged shapes (units past the last lane, outputs past the last wave)") {
  for (GgmlType type : kTypes) check_matvec(type, 2, 6, 512);
  check_matvec(GgmlType::Q4_K, 1, 5, 256);
}

TEST_CASE("matvec_int8: what it does not take") {
  CHECK(!matvec_int8_supports(GgmlType::Q4_K, 64, 128));   // in not a multiple of 256
  CHECK(!matvec_int8_supports(GgmlType::Q6_K, 64, 256));   // rows of 210 bytes
  CHECK(!matvec_int8_supports(GgmlType::Q3_K, 64, 256));   // rows of 110 bytes
  CHECK(!matvec_int8_supports(GgmlType::Q8_0, 64, 224));   // in not a multiple of 256
  CHECK(matvec_int8_supports(GgmlType::Q6_K, 64, 512));
  CHECK(!matvec_int8_supports(GgmlType::F16, 64, 256));
  CHECK_THROWS_WITH_AS(matvec_int8_kernel(GgmlType::Q4_K, 1, 64, 128),
                       "matvec_int8: no int8 kernel for a Q4_K weight of (64, 128)", Error);
  CHECK_THROWS_WITH_AS(matvec_int8_kernel(GgmlType::Q4_K, 9, 64, 256),
                       "matvec_int8: 9 rows (1 to 8)", Error);
}
