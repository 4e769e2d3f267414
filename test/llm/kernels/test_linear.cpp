// The quantized linear's choice of kernel: asked of the device (device_features), turned off by
// LLM_KERNELS=0, and the same product either way.
#include <doctest/doctest.h>

#include <set>

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

// A (rows, in) matrix of random weights in `type`, as a GGUF tensor over `bytes`.
GgufTensor matrix(std::vector<uint8_t>& bytes, uint64_t rows, GgmlType type = GgmlType::Q4_K,
                  unsigned seed = 5, uint64_t in = 256) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.1f);
  std::vector<float> row(in);
  const uint64_t size = row_bytes(type, in);
  bytes.assign(size * rows, 0);
  for (uint64_t r = 0; r < rows; ++r) {
    for (float& v : row) v = normal(rng);
    quantize(type, row, std::span<uint8_t>(bytes).subspan(r * size, size));
  }
  GgufTensor t;
  t.name = "w";
  t.dims = {in, rows};
  t.type = type;
  t.nbytes = bytes.size();
  t.data = bytes;
  return t;
}

}  // namespace

TEST_CASE("linear: the int8 DOT4 Q4_K path where the device has int8 dot products, unless off") {
  std::vector<uint8_t> bytes;
  GgufTensor t = matrix(bytes, 64, GgmlType::Q4_K, 5, 512);  // Q4_K's int8 form reads pairs
  const bool int8_dot = device_features("CPU").int8_dot;
  Linear specific = load_linear(t, "CPU");
  CHECK(specific.words.defined() == int8_dot);
  ScopedKnob off(Knob::LLM_KERNELS, "0");
  Linear generic = load_linear(t, "CPU");
  CHECK(!generic.words.defined());
  // One row (the decode case): both paths round x to int8 levels per 32 values, so they agree
  // to float rounding.
  std::vector<float> xs(512);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * float(i));
  Tensor x = Tensor::from_vector(xs, {1, 512}, dtypes::float32, "CPU");
  std::vector<float> a = specific(x).to_vector<float>(), b = generic(x).to_vector<float>();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-4));
}

TEST_CASE("linear: a chunk of rows takes the packed int8 GEMM on a CPU with int8 dot products") {
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0}) {
    CAPTURE(format_of(type).name);
    std::vector<uint8_t> bytes;
    GgufTensor t = matrix(bytes, 40, type, 5, 512);
    const bool int8_dot = device_features("CPU").int8_dot;
    Linear specific = load_linear(t, "CPU");
    CHECK(specific.packed.words.defined() == int8_dot);
    CHECK((specific.kernel == Linear::Kernel::CpuDot4) == int8_dot);
    // The output head runs one row: no GEMM copy (Q8_0's one row is the float matvec's).
    Linear head = load_linear(t, "CPU", nullptr, /*one_row=*/true);
    CHECK(!head.packed.words.defined());
    CHECK((head.kernel == Linear::Kernel::CpuDot4) == (int8_dot && type == GgmlType::Q4_K));
    ScopedKnob off(Knob::LLM_KERNELS, "0");
    Linear generic = load_linear(t, "CPU");
    CHECK(!generic.packed.words.defined());
    // All round x to int8 levels per 32 values: they agree to float rounding, 32 rows and one.
    for (int64_t rows : {32, 1}) {
      CAPTURE(rows);
      std::vector<float> xs(rows * 512);
      for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * float(i)) + 0.1f;
      Tensor x = Tensor::from_vector(xs, {rows, 512}, dtypes::float32, "CPU");
      std::vector<float> a = specific(x).to_vector<float>(), b = generic(x).to_vector<float>(),
                         c = head(x).to_vector<float>();
      REQUIRE(a.size() == b.size());
      REQUIRE(c.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        CAPTURE(i);
        CHECK(std::fabs(a[i] - b[i]) <= 1e-4f * (1 + std::fabs(b[i])));
        CHECK(std::fabs(c[i] - b[i]) <= 1e-4f * (1 + std::fabs(b[i])));
      }
    }
  }
}

TEST_CASE("linear: a GPU with int8 dot products takes the int8 decode kernel, unless off") {
  std::vector<uint8_t> bytes;
  GgufTensor t = matrix(bytes, 64);
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
  GgufTensor t = matrix(bytes, 64);
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

TEST_CASE("linear: a group's members of one type are one matrix on a GPU, each product its own") {
  // Three matrices of one type, one of another, and one of the first type that the prefill
  // kernel does not take (8 rows, not a multiple of its 16-row tiles): on a GPU with the int8
  // kernels the three are one launch's matrix, the others stand alone (a member never changes
  // kernels by being fused); elsewhere each is its own Linear. Either way each product equals
  // the member's own Linear bit for bit (decode rows, a few rows, and the prefill chunk).
  std::vector<uint8_t> b0, b1, b2, b3, b4;
  const GgufTensor ts[] = {matrix(b0, 64), matrix(b1, 16, GgmlType::Q4_K, 6),
                           matrix(b2, 32, GgmlType::Q8_0, 7), matrix(b3, 32, GgmlType::Q4_K, 8),
                           matrix(b4, 8, GgmlType::Q4_K, 9)};
  const GgufTensor* members[] = {&ts[0], &ts[1], &ts[2], &ts[3], &ts[4]};
  LinearGroup on_gpu = load_linears(members, "NULL:gfx1100");
  REQUIRE(on_gpu.linears.size() == 3);
  CHECK(on_gpu.linears[0].weight.size(0) == 64 + 16 + 32);
  CHECK(on_gpu.linears[0].words.numel() == int64_t(b0.size() + b1.size() + b3.size()) / 4);
  CHECK(on_gpu.parts[3].linear == 0);
  CHECK(on_gpu.parts[3].first == 80);
  CHECK(on_gpu.parts[2].linear == 1);
  CHECK(on_gpu.parts[4].linear == 2);
  {
    // A decode row: x quantized to int8 once for the three decode kernels (one launch each), and
    // their outputs are the products, not copied into buffers of their own.
    Tensor x1 = Tensor::full({1, 256}, 0.5, dtypes::float32, "NULL:gfx1100");
    std::set<UOp> kernels;
    int copies = 0;
    for (const Tensor& y : on_gpu(x1))
      for (const UOp& u : y.node().toposort()) {
        if (u.op() == Op::KERNEL) kernels.insert(u);
        copies += u.op() == Op::CONTIGUOUS;
      }
    CHECK(kernels.size() == 3 + 1);
    CHECK(copies == 0);
    ScopedKnob off(Knob::LLM_KERNELS, "0");
    CHECK(load_linears(members, "NULL:gfx1100").linears.size() == 5);
  }
  CHECK(load_linears(members, "CPU").linears.size() == 5);
  const std::string device = knob_str(Knob::DEV);
  LinearGroup group = load_linears(members, device);
  for (int64_t rows : {1, 7, 32}) {
    CAPTURE(rows);
    std::vector<float> xs(static_cast<size_t>(rows * 256));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::cos(0.29f * float(i)) - 0.2f;
    Tensor x = Tensor::from_vector(xs, {rows, 256}, dtypes::float32, device);
    std::vector<Tensor> got = group(x);
    REQUIRE(got.size() == 5);
    for (size_t m = 0; m < 5; ++m) {
      CAPTURE(m);
      CHECK(got[m].to_vector<float>() == load_linear(ts[m], device)(x).to_vector<float>());
    }
  }
}
