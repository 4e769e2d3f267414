// The quantized linear's choice of kernel: asked of the device (device_features), turned off by
// LLM_KERNELS=0, and the same product either way.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "base/env.h"
#include "llm/kernels/linear.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/formats.h"
#include "llm/quant/quantize.h"
#include "runtime/device_features.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// A (rows, 256) Q4_K matrix of random weights, as a GGUF tensor over `bytes`.
GgufTensor q4_k_matrix(std::vector<uint8_t>& bytes, uint64_t rows) {
  const uint64_t in = 256;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> row(in);
  bytes.assign(row_bytes(GgmlType::Q4_K, in) * rows, 0);
  for (uint64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng);
    quantize(GgmlType::Q4_K, row,
             std::span<uint8_t>(bytes).subspan(r * row_bytes(GgmlType::Q4_K, in),
                                               row_bytes(GgmlType::Q4_K, in)));
  }
  GgufTensor t;
  t.name = "w";
  t.dims = {in, rows};
  t.type = GgmlType::Q4_K;
  t.nbytes = bytes.size();
  t.data = bytes;
  return t;
}

}  // namespace

TEST_CASE("linear: the int8 DOT4 Q4_K path where the device has int8 dot products, unless off") {
  std::vector<uint8_t> bytes;
  GgufTensor t = q4_k_matrix(bytes, 64);
  const bool int8_dot = device_features("CPU").int8_dot;
  Linear specific = load_linear(t, "CPU");
  CHECK(specific.words.defined() == int8_dot);
  ScopedKnob off(Knob::LLM_KERNELS, "0");
  Linear generic = load_linear(t, "CPU");
  CHECK(!generic.words.defined());
  // One row (the decode case): both paths round x to int8 levels per 32 values, so they agree
  // to float rounding.
  std::vector<float> xs(256);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * float(i));
  Tensor x = Tensor::from_vector(xs, {1, 256}, dtypes::float32, "CPU");
  std::vector<float> a = specific(x).to_vector<float>(), b = generic(x).to_vector<float>();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-4));
}

TEST_CASE("linear: a GPU with int8 dot products takes the int8 decode kernel, unless off") {
  std::vector<uint8_t> bytes;
  GgufTensor t = q4_k_matrix(bytes, 64);
  Linear on = load_linear(t, "NULL:gfx1100");
  CHECK(on.kernel == Linear::Kernel::GpuInt8);
  CHECK(on.words.dtype() == dtypes::uint32);
  CHECK(on.words.numel() == static_cast<int64_t>(bytes.size() / 4));
  ScopedKnob off(Knob::LLM_KERNELS, "0");
  CHECK(load_linear(t, "NULL:gfx1100").kernel == Linear::Kernel::Generic);
}

TEST_CASE("linear: 1, 8 and 9 rows on the default device agree with the dequantized weight") {
  // 1 and 8 rows take the decode kernel where the device has one, 9 the generic path (on a GPU
  // over the weight's words): each within int8 rounding of x times the reference weight.
  std::vector<uint8_t> bytes;
  GgufTensor t = q4_k_matrix(bytes, 64);
  std::vector<float> w(64 * 256);
  dequantize(GgmlType::Q4_K, bytes, w);
  Linear l = load_linear(t, knob_str(Knob::DEV));
  for (int64_t rows : {1, 8, 9}) {
    CAPTURE(rows);
    std::vector<float> xs(static_cast<size_t>(rows * 256));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * float(i)) + 0.1f;
    std::vector<float> got = l(Tensor::from_vector(xs, {rows, 256})).to_vector<float>();
    REQUIRE(got.size() == static_cast<size_t>(rows * 64));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < 64; ++o) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < 256; ++k) {
          want += double(w[o * 256 + k]) * xs[r * 256 + k];
          mag += std::fabs(double(w[o * 256 + k]) * xs[r * 256 + k]);
        }
        CHECK(std::fabs(got[r * 64 + o] - want) < 1e-2 * mag);  // int8 levels: 1/254 per value
      }
  }
}
