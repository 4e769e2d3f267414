// The Qwen models on the device under test (DEV; CTest runs this suite with DEV=AMD on the gfx1100
// emulator) against the same model on the CPU and against the f64 reference forwards: prefill
// chunks of 1, 5 and 32 tokens through the padded prefill graph, then decode steps through the
// JIT (eager, capture, replays). Greedy ids agree with the CPU's wherever the CPU's top-2 logit
// margin is not a near-tie.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "base/env.h"
#include "llm/config/demo_model.h"
#include "llm/kernels/int8_units.h"
#include "llm/models/layers.h"
#include "llm/models/model.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/formats.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/linear_int8.h"
#include "llm/quant/presets.h"
#include "llm/quant/quantize.h"
#include "runtime/device_features.h"
#include "test/llm/models/models_test_util.h"
#include "test/llm/reference/qwen35_reference.h"
#include "test/llm/reference/qwen3_reference.h"

using namespace ugrad;
using namespace ugrad::llm;
using test::rel_err;

namespace {

// As the CPU model tests: float32 rounding with float16 caches; int8-rounded inputs (the formats
// int8_activations names) can cascade a one-ulp difference into another rounding level
// (test_qwen3.cpp). On a GPU the int8 decode kernel (llm/kernels/matvec_int8.h) rounds the input
// of every format it takes for up to kMatvecMaxRows rows, where the CPU and the reference round
// only those formats': the same looser
// tolerance for every call after one (the kernel itself is checked against its exact oracle in
// test_matvec_int8.cpp). Measured on the hybrid MoE Q4_K model: 0.02 to 0.049 against the
// reference with the generic delta rule, 0.02 to 0.053 with the fused scan (delta_scan.h, its
// own rounding of the same recurrence, checked against the recurrence in double in
// test_delta_scan.cpp): the int8 rounding of every linear's input, carried along by the
// recurrent state, not a kernel error (a wrong kernel is off by order 1).
constexpr double kTol = 5e-3, kInt8Tol = 8e-2;
constexpr double kNearTie = 0.05;  // top-2 logit margin below which greedy ids may differ
constexpr int64_t kContext = 64;

double tolerance(GgmlType type, const std::string& device) {
  const DeviceFeatures f = device_features(device);
  const bool int8_kernel =
      f.is_gpu && f.int8_dot && knob_int(Knob::LLM_KERNELS) != 0 && unit_format(type);
  return int8_activations(type) || int8_kernel ? kInt8Tol : kTol;
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

double top2_margin(std::vector<float> v) {
  std::partial_sort(v.begin(), v.begin() + 2, v.end(), std::greater<float>());
  return double(v[0]) - double(v[1]);
}

// Runs the prompt in chunks of 1, 5 and 32 tokens, then three decode steps, on the device under
// test and on the CPU, checking each call's logits against both the CPU's and the reference's.
template <typename Reference>
void check_on_device(const DemoModelOptions& options) {
  const std::string device = knob_str(Knob::DEV);
  REQUIRE_MESSAGE(device != "CPU", "this suite compares DEV with the CPU: set DEV (e.g. AMD)");
  CAPTURE(format_of(options.weight_type).name);
  GgufFile file = test::demo_gguf(options);
  Reference ref(file);
  std::unique_ptr<LanguageModel> dev = load_model(file, kContext, device),
                                 cpu = load_model(file, kContext, "CPU");
  std::vector<int32_t> tokens(41);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 97 + 5) % 271);
  const std::pair<int64_t, int64_t> calls[] = {{0, 1},   {1, 6},   {6, 38},
                                               {38, 39}, {39, 40}, {40, 41}};
  const double tol = tolerance(options.weight_type, device);  // the KV cache carries it over
  for (const auto& call : calls) {
    const int64_t lo = call.first, hi = call.second;
    std::span<const int32_t> chunk = std::span(tokens).subspan(lo, hi - lo);
    std::vector<float> got = dev->forward(chunk, lo).to_vector<float>();
    std::vector<float> on_cpu = cpu->forward(chunk, lo).to_vector<float>();
    std::vector<float> want;
    for (int64_t p = lo; p < hi; ++p) want = ref.forward(tokens[p], static_cast<uint32_t>(p));
    CAPTURE(lo);
    CAPTURE(hi);
    CHECK(rel_err(got, on_cpu) < tol);
    CHECK(rel_err(got, want) < tol);
    if (top2_margin(on_cpu) >= kNearTie) CHECK(argmax(got) == argmax(on_cpu));
  }
}

// A file of llama-quantize's `preset` (its tensor-type mixture, llm/quant/presets.h) on the device
// under test and on the CPU: a 5-token prefill chunk, then greedy decode steps that feed both the
// CPU's choice. The ids agree up to the first near-tie, the logits within the int8 tolerance.
void check_preset_on_device(const DemoModelOptions& options) {
  const std::string device = knob_str(Knob::DEV);
  REQUIRE_MESSAGE(device != "CPU", "this suite compares DEV with the CPU: set DEV (e.g. AMD)");
  GgufFile file = test::demo_gguf(options);
  std::unique_ptr<LanguageModel> dev = load_model(file, kContext, device),
                                 cpu = load_model(file, kContext, "CPU");
  std::vector<int32_t> tokens{9, 70, 13, 57, 5};
  std::span<const int32_t> chunk = tokens;
  for (int64_t pos = 0; pos < 7; pos += static_cast<int64_t>(chunk.size())) {
    CAPTURE(pos);
    std::vector<float> got = dev->forward(chunk, pos).to_vector<float>();
    std::vector<float> on_cpu = cpu->forward(chunk, pos).to_vector<float>();
    CHECK(rel_err(got, on_cpu) < kInt8Tol);
    if (top2_margin(on_cpu) < kNearTie) break;
    REQUIRE(argmax(got) == argmax(on_cpu));
    tokens.push_back(argmax(on_cpu));
    chunk = std::span<const int32_t>(tokens).last(1);
  }
}

DemoModelOptions hybrid(ModelArch arch, GgmlType type, uint64_t seed) {
  DemoModelOptions o = test::small_model(arch, type, seed);
  o.n_layers = 4;
  o.full_attention_interval = 2;
  o.n_rot = 16;
  return o;
}

}  // namespace

TEST_CASE("device: Qwen3 F32") {
  check_on_device<test::ReferenceQwen3>(test::small_model(ModelArch::kQwen3, GgmlType::F32, 11));
}
TEST_CASE("device: Qwen3 Q8_0") {
  check_on_device<test::ReferenceQwen3>(test::small_model(ModelArch::kQwen3, GgmlType::Q8_0, 12));
}
TEST_CASE("device: Qwen3 Q4_K") {
  check_on_device<test::ReferenceQwen3>(test::small_model(ModelArch::kQwen3, GgmlType::Q4_K, 13));
}
TEST_CASE("device: Qwen3 IQ4_XS") {
  check_on_device<test::ReferenceQwen3>(test::small_model(ModelArch::kQwen3, GgmlType::IQ4_XS, 14));
}
TEST_CASE("device: Qwen3.5 hybrid Q8_0") {
  check_on_device<test::ReferenceQwen35>(hybrid(ModelArch::kQwen35, GgmlType::Q8_0, 15));
}
TEST_CASE("device: qwen3moe Q8_0") {
  DemoModelOptions o = test::small_model(ModelArch::kQwen3Moe, GgmlType::Q8_0, 16);
  o.n_experts_used = 3;
  o.expert_ffn_dim = 256;
  check_on_device<test::ReferenceQwen35>(o);
}
TEST_CASE("device: qwen35moe Q4_K") {
  DemoModelOptions o = hybrid(ModelArch::kQwen35Moe, GgmlType::Q4_K, 17);
  o.n_experts = 4;
  o.n_experts_used = 2;
  o.expert_ffn_dim = 256;
  o.shared_ffn_dim = 256;
  check_on_device<test::ReferenceQwen35>(o);
}

// llama-quantize's presets at two shapes: rows of 256 (Q6_K's and Q3_K's rows are not whole
// words, so their linears take the generic path; a tied Q6_K head), and one whose every matrix
// the hand-written kernels take (rows of 512, 4 query heads per KV head: the n_gqa rules; an
// untied head); 2 blocks, so that the layer rules give each a different type (Q4_K_M: Q4_K, then
// Q6_K). Q4_K_M and IQ4_XS also as a Qwen3.5 hybrid (attn_qkv under the value projection's
// rule). One CTest per preset (--subcase=NAME*).
TEST_CASE("device: llama.cpp presets") {
  for (const QuantPreset& p : quant_presets()) {
    DemoModelOptions o = test::small_model(ModelArch::kQwen3, GgmlType::F32, 21);
    o.preset = p.name;
    if (p.name == "Q4_K_M" || p.name == "IQ4_XS") {
      SUBCASE((std::string(p.name) + " hybrid").c_str()) {
        DemoModelOptions h = hybrid(ModelArch::kQwen35, GgmlType::F32, 22);
        h.preset = p.name;
        check_preset_on_device(h);
      }
    }
    SUBCASE((std::string(p.name) + " rows of 256").c_str()) {
      o.ffn_dim = 256;
      check_preset_on_device(o);
    }
    SUBCASE((std::string(p.name) + " kernel shapes").c_str()) {
      o.dim = 512;
      o.n_heads = 8;
      o.ffn_dim = 512;
      o.tied_output = false;
      check_preset_on_device(o);
    }
  }
}

// The token embedding of every type the linears read: the rows the tokens pick (dequantized on
// the host, only those rows), on the device, equal to the reference dequantizer's bit for bit,
// and padded with zero rows.
TEST_CASE("device: embedding rows of every type") {
  const std::string device = knob_str(Knob::DEV);
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    CAPTURE(f.name);
    const int64_t dim = 256, vocab = 40;
    std::vector<float> src(static_cast<size_t>(dim * vocab));
    for (size_t i = 0; i < src.size(); ++i) src[i] = std::sin(0.11f * float(i)) * 0.3f;
    std::vector<uint8_t> bytes(row_bytes(f.type, dim) * vocab);
    quantize(f.type, src, bytes);
    std::vector<float> table(src.size());
    dequantize(f.type, bytes, table);
    GgufTensor t;
    t.name = "token_embd.weight";
    t.dims = {static_cast<uint64_t>(dim), static_cast<uint64_t>(vocab)};
    t.type = f.type;
    t.nbytes = bytes.size();
    t.data = bytes;
    const std::vector<int32_t> tokens{3, 0, 39, 3};
    const std::vector<float> got = embed_rows(t, tokens, 5, device).to_vector<float>();
    REQUIRE(got.size() == static_cast<size_t>(5 * dim));
    for (size_t r = 0; r < 5; ++r)
      for (int64_t k = 0; k < dim; ++k)
        REQUIRE(got[r * dim + k] == (r < tokens.size() ? table[tokens[r] * dim + k] : 0.0f));
  }
}
