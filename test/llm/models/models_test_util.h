// What the model tests share: small demo GGUFs in memory, the relative error of two logit
// vectors, and the two-turn prefix-reuse scenario.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "llm/config/demo_model.h"
#include "llm/models/generate.h"

namespace ugrad::llm::test {

/// A small model of `arch`: dim 256 (a multiple of every block size), 4 query heads over 2 KV
/// heads of 64; Gated DeltaNet with 4 value heads over 2 key heads of 64. Tests edit the rest.
inline DemoModelOptions small_model(ModelArch arch, GgmlType type, uint64_t seed) {
  DemoModelOptions o;
  o.arch = arch;
  o.n_layers = 2;
  o.dim = 256;
  o.n_heads = 4;
  o.n_kv_heads = 2;
  o.head_dim = 64;
  o.ffn_dim = 512;
  o.ssm_key_heads = 2;
  o.ssm_value_heads = 4;
  o.ssm_key_head_dim = 64;
  o.ssm_value_head_dim = 64;
  o.weight_type = type;
  o.seed = seed;
  return o;
}

/// The demo model's GGUF, in memory.
inline GgufFile demo_gguf(const DemoModelOptions& o) {
  return GgufFile::from_buffer(build_demo_model(o).to_bytes());
}

/// max |a - b| relative to max |b|; infinite where a NaN in either is not matched in the other
/// (std::max would pass over it).
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      if (std::isnan(a[i]) != std::isnan(b[i])) return INFINITY;
      continue;
    }
    num = std::max(num, std::abs(double(a[i]) - double(b[i])));
    den = std::max(den, std::abs(double(b[i])));
  }
  return num / den;
}

/// The options of the prefix-reuse scenario: 5 tokens, greedy, prefill chunks of 4.
inline GenerateOptions reuse_options() {
  GenerateOptions o;
  o.max_tokens = 5;
  o.chunk = 4;
  return o;
}

/// Two turns on `reused` (the second prompt extends the first and its answer), and the second
/// prompt alone on `fresh`.
struct ReuseRuns {
  GenerateResult first, reused, fresh;
};
inline ReuseRuns prefix_reuse_runs(Generator& reused, Generator& fresh) {
  std::vector<int32_t> first{1, 2, 3, 4, 5, 6};
  ReuseRuns runs;
  runs.first = reused.generate(first, reuse_options());
  std::vector<int32_t> second = first;
  second.insert(second.end(), runs.first.tokens.begin(), runs.first.tokens.end());
  second.push_back(77);
  runs.reused = reused.generate(second, reuse_options());
  runs.fresh = fresh.generate(second, reuse_options());
  return runs;
}

}  // namespace ugrad::llm::test
