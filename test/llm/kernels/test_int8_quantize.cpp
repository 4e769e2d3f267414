// The hand-written int8 quantization (llm/kernels/int8_quantize.h) against the tensor path
// (quantize_rows_int8) on the default device (CTest runs it again on DEV=AMD): the same words and
// scales, bit for bit, including an all-zero block, exact halves and an outlier.
#include <doctest/doctest.h>

#include <random>

#include "base/error.h"
#include "llm/kernels/int8_quantize.h"

using namespace ugrad;
using namespace ugrad::llm;

TEST_CASE("int8_quantize: the tensor path's words and scales, bit for bit") {
  for (auto [rows, in] : {std::pair<int64_t, int64_t>{1, 1024}, {3, 3072}, {7, 96}}) {
    CAPTURE(rows);
    CAPTURE(in);
    std::mt19937 rng(23);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> xs(static_cast<size_t>(rows * in));
    for (float& v : xs) v = normal(rng);
    for (int64_t i = 0; i < 32; ++i) xs[i] = 0;                   // a zero block
    for (int64_t i = 32; i < 64; ++i) xs[i] = float(i - 48) / 2;  // exact halves
    xs[70] = -300.0f;                                             // an outlier
    Tensor x = Tensor::from_vector(xs, {rows, in});
    const Int8Rows want = quantize_rows_int8(x), got = int8_quantize(x);
    CHECK(got.words.to_vector<int32_t>() == want.words.to_vector<int32_t>());
    CHECK(got.scale.to_vector<float>() == want.scale.contiguous().to_vector<float>());
  }
}

TEST_CASE("int8_quantize: rows of a length that is not a multiple of 32 are an error") {
  CHECK_THROWS_WITH_AS(int8_quantize_kernel(2, 100),
                       "int8_quantize: need (rows, in) with in a multiple of 32, got (2, 100)",
                       Error);
}
