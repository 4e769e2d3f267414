// The reference Qwen3 forward pass (test/llm/reference): its building blocks against closed
// forms, a hand-set one-layer model against logits computed here in a few lines, and properties
// on seeded demo models (finite, deterministic, KV cache == whole-sequence recompute).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "base/float16.h"
#include "llm/config/demo_model.h"
#include "test/llm/config/model_test_util.h"
#include "test/llm/reference/qwen3_reference.h"

namespace ugrad::llm::test {
namespace {

using Vec = std::vector<double>;

TEST_CASE("reference: RoPE NEOX is the identity at position 0 and rotates half-split pairs") {
  const Vec x = {0.5, -1.0, 2.0, 0.25, 3.0, -0.75};
  Vec y = x;
  rope_neox(y, 0, 1e6);
  CHECK(y == x);
  // n = 6: pair i is (i, i + 3), angle pos * theta^(-2i/6).
  const double theta = 100.0;
  const uint32_t pos = 3;
  y = x;
  rope_neox(y, pos, theta);
  for (size_t i = 0; i < 3; ++i) {
    const double angle = pos * std::pow(theta, -double(i) / 3.0);
    CHECK(y[i] == doctest::Approx(x[i] * std::cos(angle) - x[i + 3] * std::sin(angle)));
    CHECK(y[i + 3] == doctest::Approx(x[i] * std::sin(angle) + x[i + 3] * std::cos(angle)));
  }
  // Pair 0 turns by exactly `pos` radians whatever theta is.
  CHECK(y[0] == doctest::Approx(0.5 * std::cos(3.0) - 0.25 * std::sin(3.0)));
}

TEST_CASE("reference: RMSNorm") {
  Vec x = {3.0, 4.0};
  const std::vector<float> w = {1.0f, 2.0f};
  rms_norm(x, w, 0.0);
  const double rms = std::sqrt(12.5);
  CHECK(x[0] == doctest::Approx(3.0 / rms));
  CHECK(x[1] == doctest::Approx(8.0 / rms));
  Vec zero = {0.0, 0.0};
  rms_norm(zero, w, 1e-6);
  CHECK(zero == Vec{0.0, 0.0});
}

// A one-layer model with hand-set F32 weights: dim 4, 4 query heads on 2 KV heads of size 4,
// ffn 3, vocab 5, tied output.
constexpr uint32_t kDim = 4, kHeads = 4, kKvHeads = 2, kHeadDim = 4, kFfn = 3, kVocab = 5;

std::vector<float> pattern(size_t n, double salt, double scale = 0.5) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(scale * std::sin(1.3 * double(i) + salt));
  return v;
}

ToyModel hand_model(double q_salt = 4.0, float theta = 10000.0f, bool untied = false) {
  ToyModel m = toy_qwen3(1, kDim, kHeads, kKvHeads, kHeadDim, kFfn, kVocab);
  if (untied) m.tensors.push_back({"output.weight", {kDim, kVocab}});
  m.metadata["qwen3.rope.freq_base"] = theta;
  double salt = 0;
  for (TensorSpec& t : m.tensors) {
    size_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    salt += 1.0;
    if (t.dims.size() == 1) {  // norms near 1, each element different
      t.values = pattern(n, salt, 0.2);
      for (float& v : t.values) v += 1.0f;
    } else {
      t.values = pattern(n, t.name == "blk.0.attn_q.weight" ? q_salt : salt);
    }
  }
  return m;
}

// The few formulas the hand check needs, written out independently of the reference.
struct HandMath : ToyMath {
  // Keys and values as the cache stores them: float16.
  static Vec half(Vec v) {
    for (double& x : v) x = half_to_float(float_to_half(static_cast<float>(x)));
    return v;
  }
  Vec v_proj(int32_t t) const {
    return half(
        mv("blk.0.attn_v.weight", rms(embed(t), "blk.0.attn_norm.weight"), kKvHeads * kHeadDim));
  }
  // Per-query-head attention output when every query head h reads KV head a[h / group].
  static Vec expand_kv(const Vec& a) {
    Vec heads;  // query heads 0,1 read KV head 0; heads 2,3 read KV head 1 (grouped GQA)
    for (uint32_t h = 0; h < kHeads; ++h) {
      const uint32_t g = h / (kHeads / kKvHeads);
      heads.insert(heads.end(), a.begin() + g * kHeadDim, a.begin() + (g + 1) * kHeadDim);
    }
    return heads;
  }
  // Head `head` of projection `proj` (q or k) at position pos: per-head RMSNorm, NEOX RoPE.
  Vec q_or_k(int32_t t, uint32_t pos, const std::string& proj, const std::string& norm,
             uint32_t n_heads, uint32_t head, double theta) const {
    const Vec all = mv(proj, rms(embed(t), "blk.0.attn_norm.weight"), n_heads * kHeadDim);
    Vec x(all.begin() + head * kHeadDim, all.begin() + (head + 1) * kHeadDim);
    x = rms(x, norm);
    const uint32_t half = kHeadDim / 2;
    Vec y = x;
    for (uint32_t i = 0; i < half; ++i) {
      const double a = pos * std::pow(theta, -2.0 * i / kHeadDim);
      y[i] = x[i] * std::cos(a) - x[i + half] * std::sin(a);
      y[i + half] = x[i] * std::sin(a) + x[i + half] * std::cos(a);
    }
    return y;
  }
  // Attention of the last token of `tokens` over all of them, per query head, concatenated.
  Vec attention(const std::vector<int32_t>& tokens, double theta) const {
    const uint32_t p = uint32_t(tokens.size() - 1);
    Vec heads;
    for (uint32_t h = 0; h < kHeads; ++h) {
      const uint32_t g = h / (kHeads / kKvHeads);
      const Vec q =
          q_or_k(tokens[p], p, "blk.0.attn_q.weight", "blk.0.attn_q_norm.weight", kHeads, h, theta);
      Vec weights;
      for (uint32_t j = 0; j <= p; ++j) {
        const Vec k = half(q_or_k(tokens[j], j, "blk.0.attn_k.weight", "blk.0.attn_k_norm.weight",
                                  kKvHeads, g, theta));
        double dot = 0;
        for (uint32_t d = 0; d < kHeadDim; ++d) dot += q[d] * k[d];
        weights.push_back(std::exp(dot / std::sqrt(double(kHeadDim))));
      }
      double total = 0;
      for (double e : weights) total += e;
      Vec out(kHeadDim, 0.0);
      for (uint32_t j = 0; j <= p; ++j) {
        const Vec v = v_proj(tokens[j]);
        for (uint32_t d = 0; d < kHeadDim; ++d) out[d] += weights[j] / total * v[g * kHeadDim + d];
      }
      heads.insert(heads.end(), out.begin(), out.end());
    }
    return heads;
  }
  // The rest of the layer and the output head, given the concatenated attention heads.
  std::vector<float> logits_after_attention(int32_t t, const Vec& heads) const {
    Vec x = embed(t);
    const Vec o = mv("blk.0.attn_output.weight", heads, kDim);
    for (size_t i = 0; i < kDim; ++i) x[i] += o[i];
    const Vec h = rms(x, "blk.0.ffn_norm.weight");
    const Vec g = mv("blk.0.ffn_gate.weight", h, kFfn), u = mv("blk.0.ffn_up.weight", h, kFfn);
    Vec act(kFfn);
    for (size_t i = 0; i < kFfn; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const Vec d = mv("blk.0.ffn_down.weight", act, kDim);
    for (size_t i = 0; i < kDim; ++i) x[i] += d[i];
    const bool tied = std::none_of(m.tensors.begin(), m.tensors.end(),
                                   [](const TensorSpec& t) { return t.name == "output.weight"; });
    const Vec logits =
        mv(tied ? "token_embd.weight" : "output.weight", rms(x, "output_norm.weight"), kVocab);
    return std::vector<float>(logits.begin(), logits.end());
  }
};

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("logit ", i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

TEST_CASE("reference: at position 0 attention is the V projection (hand-set model)") {
  for (const bool untied : {false, true}) {
    const ToyModel m = hand_model(4.0, 10000.0f, untied);
    ReferenceQwen3 ref(m.build());
    const HandMath hand{{m, kDim}};
    for (int32_t t = 0; t < int32_t(kVocab); ++t) {
      INFO("token ", t, untied ? " (untied output)" : " (tied output)");
      ref.reset();
      check_close(ref.forward(t, 0),
                  hand.logits_after_attention(t, HandMath::expand_kv(hand.v_proj(t))), 1e-6);
    }
  }
}

TEST_CASE("reference: with Wq = 0 attention averages V over the prefix (hand-set model)") {
  // q = 0 makes every score 0, so position p attends uniformly to positions 0..p.
  ToyModel m = hand_model();
  for (float& v : m.tensor("blk.0.attn_q.weight").values) v = 0.0f;
  ReferenceQwen3 ref(m.build());
  const HandMath hand{{m, kDim}};
  const std::vector<int32_t> tokens = {3, 1, 4};
  Vec sum(kKvHeads * kHeadDim, 0.0);
  for (uint32_t p = 0; p < tokens.size(); ++p) {
    const Vec v = hand.v_proj(tokens[p]);
    Vec mean(v.size());
    for (size_t i = 0; i < v.size(); ++i) mean[i] = (sum[i] += v[i]) / double(p + 1);
    INFO("position ", p);
    check_close(ref.forward(tokens[p], p),
                hand.logits_after_attention(tokens[p], HandMath::expand_kv(mean)), 1e-6);
  }
}

TEST_CASE("reference: attention over a prefix with per-head q/k norms and RoPE (hand-set model)") {
  const double theta = 10000.0;
  const ToyModel m = hand_model(4.0, float(theta));
  ReferenceQwen3 ref(m.build());
  const HandMath hand{{m, kDim}};
  const std::vector<int32_t> tokens = {1, 4, 2, 2};
  for (uint32_t p = 0; p < tokens.size(); ++p) {
    INFO("position ", p);
    const std::vector<int32_t> prefix(tokens.begin(), tokens.begin() + p + 1);
    check_close(ref.forward(tokens[p], p),
                hand.logits_after_attention(tokens[p], hand.attention(prefix, theta)), 1e-6);
  }
}

TEST_CASE("reference: q/k weights and RoPE theta matter from position 1 on, not at 0") {
  const std::vector<int32_t> tokens = {2, 0};
  const auto run = [&](const ToyModel& m) {
    ReferenceQwen3 ref(m.build());
    std::vector<float> first = ref.forward(tokens[0], 0);
    return std::pair(std::move(first), ref.forward(tokens[1], 1));
  };
  const auto base = run(hand_model());
  for (const ToyModel& other : {hand_model(/*q_salt=*/9.0), hand_model(4.0, /*theta=*/3.0f)}) {
    const auto changed = run(other);
    CHECK(changed.first == base.first);
    double diff = 0;
    for (size_t i = 0; i < kVocab; ++i) diff += std::abs(changed.second[i] - base.second[i]);
    CHECK(diff > 1e-4);
  }
}

DemoModelOptions small_demo(GgmlType type, uint64_t seed = 3) {
  DemoModelOptions o;
  o.weight_type = type;
  o.seed = seed;
  o.n_layers = 2;
  if (format_of(type).block_size > 32) {
    o.dim = 256;
    o.head_dim = 32;
    o.n_heads = 8;
    o.n_kv_heads = 2;
    o.ffn_dim = 256;
  } else {
    o.dim = 64;
    o.head_dim = 16;
    o.n_heads = 4;
    o.n_kv_heads = 2;
    o.ffn_dim = 96;
  }
  return o;
}

GgufFile demo_file(const DemoModelOptions& o) {
  return GgufFile::from_buffer(build_demo_model(o).to_bytes());
}

const std::vector<int32_t> kPrompt = {104, 101, 108, 108, 111, 32, 266, 260};

TEST_CASE("reference: KV-cache decoding equals recomputing the whole prefix") {
  for (GgmlType type : {GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_K}) {
    INFO(format_of(type).name);
    ReferenceQwen3 ref(demo_file(small_demo(type)));
    const std::vector<std::vector<float>> all = ref.forward_sequence(kPrompt);
    for (uint32_t p = 0; p < kPrompt.size(); ++p) {
      INFO("position ", p);
      check_close(ref.forward(kPrompt[p], p), all[p], 1e-6);
    }
    CHECK(ref.cached_positions() == kPrompt.size());
  }
}

TEST_CASE("reference: rewinding the cache equals a fresh run of the shorter prefix") {
  ReferenceQwen3 ref(demo_file(small_demo(GgmlType::F32)));
  for (uint32_t p = 0; p < kPrompt.size(); ++p) ref.forward(kPrompt[p], p);
  const std::vector<int32_t> edited = {kPrompt[0], kPrompt[1], 7};
  const std::vector<float> rewound = ref.forward(edited[2], 2);
  CHECK(ref.cached_positions() == 3);
  check_close(rewound, ref.forward_sequence(edited)[2], 1e-6);
  CHECK(error_of([&] { ref.forward(1, 5); }).find("position 5") != std::string::npos);
  CHECK(error_of([&] { ref.forward(100000, 0); }).find("token 100000") != std::string::npos);
}

TEST_CASE("reference: demo-model logits are finite and spread, in every weight type") {
  for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q2_K,
                        GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::IQ4_XS}) {
    INFO(format_of(type).name);
    ReferenceQwen3 ref(demo_file(small_demo(type)));
    for (uint32_t p = 0; p < 4; ++p) {
      const std::vector<float> logits = ref.forward(kPrompt[p], p);
      double sum = 0, sum_sq = 0;
      for (float v : logits) {
        REQUIRE(std::isfinite(v));
        sum += v;
        sum_sq += double(v) * v;
      }
      const double mean = sum / double(logits.size());
      const double std = std::sqrt(sum_sq / double(logits.size()) - mean * mean);
      CHECK(std > 0.3);   // not degenerate (all equal) ...
      CHECK(std < 10.0);  // ... and not blown up
    }
  }
}

TEST_CASE("reference: quantized demo models stay close to the F32 model of the same seed") {
  // Q3_K measures 0.54 (twice Q4_K's weight error); Q2_K's 0.96 would check nothing.
  const std::pair<GgmlType, double> tolerances[] = {{GgmlType::F16, 0.01},
                                                    {GgmlType::Q8_0, 0.05},
                                                    {GgmlType::Q4_K, 0.35},
                                                    {GgmlType::Q3_K, 0.65}};
  for (const auto& tc : tolerances) {
    const GgmlType type = tc.first;  // (clang 14 lambdas, here INFO, cannot capture bindings)
    const double tolerance = tc.second;
    INFO(format_of(type).name);
    DemoModelOptions o = small_demo(type);
    ReferenceQwen3 quant(demo_file(o));
    o.weight_type = GgmlType::F32;
    ReferenceQwen3 full(demo_file(o));
    const std::vector<float> a = quant.forward_sequence(kPrompt).back();
    const std::vector<float> b = full.forward_sequence(kPrompt).back();
    double err = 0, norm = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      err += std::pow(double(a[i]) - b[i], 2);
      norm += double(b[i]) * b[i];
    }
    CHECK(std::sqrt(err / norm) < tolerance);
  }
}

TEST_CASE("reference: greedy decoding is deterministic") {
  const GgufFile f = demo_file(small_demo(GgmlType::Q8_0, /*seed=*/11));
  ReferenceQwen3 a(f), b(f);
  const std::vector<int32_t> first = a.greedy(kPrompt, 10);
  REQUIRE(first.size() == 10);
  CHECK(b.greedy(kPrompt, 10) == first);
  CHECK(a.greedy(kPrompt, 10) == first);  // greedy resets the cache itself
  for (int32_t t : first) CHECK(t < int32_t(a.hparams().vocab));
  // The first generated token is the argmax of the prompt's last logits.
  const std::vector<float> last = a.forward_sequence(kPrompt).back();
  CHECK(std::max_element(last.begin(), last.end()) - last.begin() == first[0]);
}

}  // namespace
}  // namespace ugrad::llm::test
