// Lazy dequantization (tensor expressions) against the reference dequantizers, every format.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "llm/quant/dequantize.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/quantize.h"
#include "runtime/jit.h"
#include "uop/error.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Blocks of `type` for n elements: quantized random data where a quantizer exists, otherwise
// random bytes with every 16-bit scale field made a small finite half.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> bytes(row_bytes(type, n));
  if (can_quantize(type)) {
    quantize(type, x, bytes);
  } else if (type == GgmlType::F32) {
    std::memcpy(bytes.data(), x.data(), bytes.size());
  } else {
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  }
  return bytes;
}

Tensor uint8_tensor(const std::vector<uint8_t>& bytes) {
  return Tensor::from_bytes(std::as_bytes(std::span(bytes)), {static_cast<int64_t>(bytes.size())},
                            dtypes::uint8);
}

}  // namespace

TEST_CASE("lazy dequantization matches the reference dequantizer for every supported format") {
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    CAPTURE(f.name);
    int64_t n = 4 * 256;
    std::vector<uint8_t> bytes = random_blocks(f.type, n, 7 + static_cast<uint32_t>(f.type));
    std::vector<float> want(n);
    dequantize(f.type, bytes, want);
    std::vector<float> got =
        dequantize_lazy(uint8_tensor(bytes), f.type, {4, 256}).to_vector<float>();
    REQUIRE(got.size() == want.size());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool same = got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]));
      // A fused multiply-add may round the affine formats' d*q + m once instead of twice.
      if (!same && std::abs(got[i] - want[i]) <= 1e-6f * (1 + std::abs(want[i]))) same = true;
      mismatches += !same;
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("every format the reference can dequantize has a lazy form (except Q8_K)") {
  for (const QuantFormat& f : all_formats())
    if (can_dequantize(f.type) && f.type != GgmlType::Q8_K)
      CHECK_MESSAGE(can_dequantize_lazy(f.type), f.name);
}

TEST_CASE("dequantization fuses into the consuming matmul") {
  int64_t out = 8, in = 256;
  std::vector<uint8_t> bytes = random_blocks(GgmlType::Q4_K, out * in, 3);
  Tensor w = dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {out, in});
  Tensor x = Tensor::randn({2, in});
  x.realize();
  JitStats before = jit_stats();
  Tensor y = x.matmul(w.transpose());
  std::vector<float> got = y.to_vector<float>();
  CHECK(jit_stats().schedules - before.schedules == 1);
  std::vector<float> wf(out * in);
  dequantize(GgmlType::Q4_K, bytes, wf);
  std::vector<float> xv = x.to_vector<float>();
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += double(xv[r * in + i]) * wf[o * in + i];
      CHECK(got[r * out + o] == doctest::Approx(s).epsilon(1e-4));
    }
}

TEST_CASE("bad raw data is an error naming the format") {
  std::vector<uint8_t> bytes(143);
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {256}),
                       doctest::Contains("Q4_K: 256 elements need 144 bytes, got 143"), Error);
  CHECK_THROWS_WITH_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q4_K, {100}),
                       doctest::Contains("block size 256"), Error);
  CHECK_THROWS_AS(dequantize_lazy(uint8_tensor(bytes), GgmlType::Q2_K, {256}), Error);
}
