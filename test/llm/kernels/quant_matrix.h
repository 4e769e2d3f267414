// Random quantized matrices for the kernel tests: the blocks, their reference dequantization,
// and the blocks as the uint32 words the hand-written kernels read.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "llm/quant/dequantize.h"
#include "llm/quant/formats.h"
#include "llm/quant/quantize.h"
#include "tensor/tensor.h"

namespace ugrad::test {

/// The formats the hand-written quantized-linear kernels take (llm/kernels/int8_units.h).
inline constexpr llm::GgmlType kUnitTypes[] = {
    llm::GgmlType::Q4_0, llm::GgmlType::Q8_0, llm::GgmlType::Q2_K, llm::GgmlType::Q3_K,
    llm::GgmlType::Q4_K, llm::GgmlType::Q5_K, llm::GgmlType::Q6_K, llm::GgmlType::IQ4_XS};

struct QuantMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // the reference dequantization, (out, in) row-major
};

/// An (out, in) matrix of `type` quantized from normal values whose rows differ in magnitude,
/// with an outlier now and then (as real weights have).
inline QuantMatrix random_quant_matrix(llm::GgmlType type, int64_t out, int64_t in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> src(static_cast<size_t>(out * in));
  for (int64_t r = 0; r < out; ++r)
    for (int64_t k = 0; k < in; ++k)
      src[r * in + k] = normal(rng) * (0.02f + 0.01f * float(r % 7)) * (k % 97 == 0 ? 8.0f : 1.0f);
  QuantMatrix m;
  m.bytes.assign(llm::row_bytes(type, in) * out, 0);
  llm::quantize(type, src, m.bytes);
  m.values.resize(src.size());
  llm::dequantize(type, m.bytes, m.values);
  return m;
}

/// Checks `got` (rows, out) against x (rows, in) times the transpose of m's values, summed in
/// double: each element within rel * (the sum of its terms' magnitudes) + abs.
inline void check_product(const std::vector<float>& got, const std::vector<double>& x,
                          const QuantMatrix& m, int64_t rows, int64_t out, int64_t in, double rel,
                          double abs) {
  REQUIRE(got.size() == static_cast<size_t>(rows * out));
  int bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double want = 0, mag = 0;
      for (int64_t k = 0; k < in; ++k) {
        const double term = double(m.values[o * in + k]) * x[r * in + k];
        want += term;
        mag += std::fabs(term);
      }
      const double g = got[r * out + o];
      if (!(std::fabs(g - want) <= rel * mag + abs) && bad++ < 5)
        FAIL_CHECK("row " << r << " out " << o << ": got " << g << ", want " << want
                          << " (sum of |terms| " << mag << ")");
    }
  CHECK(bad == 0);
}

/// The bytes as uint32 words on the default device.
inline Tensor words_of(const std::vector<uint8_t>& bytes) {
  std::vector<uint32_t> words((bytes.size() + 3) / 4, 0);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return Tensor::from_vector(words, {static_cast<int64_t>(words.size())}, dtypes::uint32);
}

}  // namespace ugrad::test
