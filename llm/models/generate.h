// generate(): prefill a prompt in chunks, then decode token by token, continuing from the cached
// prefix when a new prompt extends what the KV cache already holds.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "llm/models/model.h"
#include "llm/models/sampler.h"

namespace ugrad::llm {

struct GenerateOptions {
  int64_t max_tokens = 256;
  SamplingOptions sampling;
  int64_t chunk = LanguageModel::kMaxChunk;  // prefill chunk length
  int top_logprobs = 0;  // > 0: record the top K (token, logprob) pairs at every position
  std::function<bool(int32_t)> is_stop;  // end-of-generation tokens
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated (the stop token included when one ended it)
  std::vector<std::vector<std::pair<int32_t, float>>> top_logprobs;
  int64_t reused_tokens = 0;  // prompt tokens served from the cache
  double prefill_seconds = 0, decode_seconds = 0;
};

class Generator {
 public:
  explicit Generator(LanguageModel& model) : model_(model) {}
  /// Generates after `prompt`; `on_token` sees each new token and may return false to stop.
  /// A prompt longer than the model's context is an Error.
  GenerateResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                          const std::function<bool(int32_t)>& on_token = {});
  /// Captures the model's prefill and decode graphs without running them (LanguageModel::prepare)
  /// and runs the sampler's graph for these options, so later calls only replay. Returns the
  /// seconds it took.
  double warm_up(const SamplingOptions& sampling = {});
  /// Tokens whose keys and values are in the cache.
  const std::vector<int32_t>& cached_tokens() const { return cached_; }

 private:
  LanguageModel& model_;
  std::vector<int32_t> cached_;
};

}  // namespace ugrad::llm
