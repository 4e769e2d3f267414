// The ugrad Qwen3 model against the reference forward pass (plain loops, double accumulation,
// reference dequantizers) on small demo GGUFs in several weight formats.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "llm/model/demo_model.h"
#include "llm/models/qwen3.h"
#include "test/llm/reference/qwen3_reference.h"
#include "uop/error.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

GgufFile demo(GgmlType type, bool tied, uint64_t seed) {
  DemoModelOptions o;
  o.n_layers = 2;
  o.dim = 256;  // a multiple of every block size
  o.n_heads = 4;
  o.n_kv_heads = 2;
  o.head_dim = 64;
  o.ffn_dim = 512;
  o.weight_type = type;
  o.tied_output = tied;
  o.seed = seed;
  std::vector<uint8_t> bytes = build_demo_model(o).to_bytes();
  return GgufFile::from_buffer(std::move(bytes));
}

// max |a - b| relative to max |b|
double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - double(b[i])));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / den;
}

void check_against_reference(GgmlType type, bool tied, double tol) {
  GgufFile file = demo(type, tied, 11);
  test::ReferenceQwen3 ref(file);
  Qwen3Model model(file, 32, "CPU");
  std::vector<int32_t> prompt{1, 17, 200, 42, 99, 7};
  // Prefill the first four at once, then one token at a time.
  std::vector<float> got = model.forward(std::span(prompt).first(4), 0);
  std::vector<float> want;
  for (uint32_t p = 0; p < 4; ++p) want = ref.forward(prompt[p], p);
  CHECK(rel_err(got, want) < tol);
  for (uint32_t p = 4; p < prompt.size(); ++p) {
    got = model.forward(std::span(prompt).subspan(p, 1), p);
    want = ref.forward(prompt[p], p);
    CAPTURE(p);
    CHECK(rel_err(got, want) < tol);
  }
  // Greedy tokens agree.
  int32_t a = static_cast<int32_t>(std::max_element(got.begin(), got.end()) - got.begin());
  int32_t b = static_cast<int32_t>(std::max_element(want.begin(), want.end()) - want.begin());
  CHECK(a == b);
}

}  // namespace

// The KV cache is half precision, so logits differ from the f64 reference by ~1e-3 relative.
TEST_CASE("Qwen3 F32 logits agree with the reference at every position") {
  check_against_reference(GgmlType::F32, true, 5e-3);
}
TEST_CASE("Qwen3 F16, untied output") { check_against_reference(GgmlType::F16, false, 5e-3); }
TEST_CASE("Qwen3 Q8_0") { check_against_reference(GgmlType::Q8_0, true, 5e-3); }
TEST_CASE("Qwen3 Q4_K") { check_against_reference(GgmlType::Q4_K, true, 5e-3); }
TEST_CASE("Qwen3 IQ4_XS") { check_against_reference(GgmlType::IQ4_XS, true, 5e-3); }

TEST_CASE("a prompt past the context is an error") {
  GgufFile file = demo(GgmlType::F32, true, 3);
  Qwen3Model model(file, 4, "CPU");
  std::vector<int32_t> prompt{1, 2, 3, 4, 5};
  CHECK_THROWS_WITH_AS(model.forward(prompt, 0), doctest::Contains("exceed the context of 4"),
                       Error);
}
