// The WMMA prefill kernel (llm/kernels/matmul_wmma.h) for every format it takes, at Qwen shapes,
// on the default device (CTest runs it again on DEV=AMD through the gfx1100 emulator): against a
// double sum over the reference dequantizer's weights times x rounded to f16. The kernel rounds
// each dequantized weight to f16 (a relative 2^-11 at most), so the bound is 1e-3 of the sum of
// the terms' magnitudes; padded rows never reach the result.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "base/env.h"
#include "base/error.h"
#include "base/float16.h"
#include "llm/kernels/matmul_wmma.h"
#include "runtime/device_features.h"
#include "test/llm/kernels/quant_matrix.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

void check_matmul(GgmlType type, int64_t rows, int64_t out, int64_t in) {
  CAPTURE(format_of(type).name);
  CAPTURE(rows);
  CAPTURE(out);
  CAPTURE(in);
  const test::QuantMatrix w =
      test::random_quant_matrix(type, out, in, static_cast<uint32_t>(3 * out + in + rows));
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xs(static_cast<size_t>(rows * in));
  for (float& v : xs) v = half_to_float(float_to_half(normal(rng)));  // exact in f16
  test::check_product(
      matmul_wmma(Tensor::from_vector(xs, {rows, in}), test::words_of(w.bytes), type, out, in)
          .to_vector<float>(),
      std::vector<double>(xs.begin(), xs.end()), w, rows, out, in, 1e-3, 0);
}

}  // namespace

TEST_CASE("matmul_wmma: every format at the Qwen shapes, 7 and 32 rows") {
  // The CPU runs each lane's WMMA products one by one (lower/cpu_workgroups.h): there, one shape.
  const bool gpu = device_features(knob_str(Knob::DEV)).is_gpu;
  for (GgmlType type : test::kUnitTypes)
    for (auto [out, in] : {std::pair<int64_t, int64_t>{1024, 1024}, {3072, 1024}, {1024, 3072}})
      for (int64_t rows : {7, 32})
        if (gpu || (out == in && rows == 32)) check_matmul(type, rows, out, in);
}

TEST_CASE("matmul_wmma: ragged shapes (feature tiles past the last wave)") {
  for (GgmlType type : test::kUnitTypes) check_matmul(type, 32, 48, 512);
  check_matmul(GgmlType::Q4_K, 1, 16, 256);
}

TEST_CASE("matmul_wmma: what it does not take") {
  CHECK(!matmul_wmma_needs(GgmlType::Q4_K, 24, 256));  // out not a multiple of 16
  CHECK(!matmul_wmma_needs(GgmlType::Q4_K, 64, 128));  // in not a multiple of 256
  CHECK(!matmul_wmma_needs(GgmlType::Q6_K, 64, 256));  // rows of 210 bytes
  CHECK(matmul_wmma_needs(GgmlType::Q6_K, 64, 512));
  CHECK_THROWS_WITH_AS(matmul_wmma_kernel(GgmlType::Q8_0, 24, 256),
                       "matmul_wmma: no WMMA kernel for a Q8_0 weight of (24, 256)", Error);
  CHECK_THROWS_WITH_AS(
      matmul_wmma(Tensor::zeros({33, 256}), Tensor::zeros({64 * 36}, dtypes::uint32),
                  GgmlType::Q4_K, 64, 256),
      "matmul_wmma: x must be (1 to 32, 256), got (33, 256)", Error);
}

TEST_SUITE("slow") {
  TEST_CASE("matmul_wmma: the 151936x1024 output head in Q8_0 and Q6_K at 32 rows on a GPU") {
    // On the CPU each lane's WMMA products run one by one: minutes at this size.
    if (!device_features(knob_str(Knob::DEV)).is_gpu) return;
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q6_K}) check_matmul(type, 32, 151936, 1024);
  }
}
