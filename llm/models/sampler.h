// Token sampling from logits: greedy, temperature, top-k, top-p and min-p, seeded and
// reproducible.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ugrad::llm {

struct SamplingOptions {
  float temperature = 0;  // 0: greedy (the lowest id among equal maxima)
  int32_t top_k = 0;      // 0: off
  float top_p = 1;        // 1: off
  float min_p = 0;        // 0: off; keeps tokens with p >= min_p * p_max
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplingOptions options);
  /// The next token for these logits. Errors on invalid options or non-finite logits everywhere.
  int32_t sample(std::span<const float> logits);
  /// The k most likely tokens and their log-probabilities (log-softmax of the raw logits).
  static std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k);

 private:
  SamplingOptions opt_;
  uint64_t state_;
};

}  // namespace ugrad::llm
