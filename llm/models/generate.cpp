#include "llm/models/generate.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"

namespace ugrad::llm {

double Generator::warm_up(const SamplingOptions& sampling) {
  auto t0 = std::chrono::steady_clock::now();
  model_.prepare();
  Sampler(sampling, model_.device()).warm_up(model_.config().vocab_size);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

GenerateResult Generator::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const std::function<bool(int32_t)>& on_token) {
  const int64_t ctx = model_.max_context();
  if (prompt.empty()) fail("generate: the prompt is empty");
  if (static_cast<int64_t>(prompt.size()) > ctx)
    fail("generate: the prompt has {} tokens but the context holds {} (raise --max-context)",
         prompt.size(), ctx);
  if (options.chunk < 1 || options.chunk > LanguageModel::kMaxChunk)
    fail("generate: chunk length {} is outside [1, {}]", options.chunk, LanguageModel::kMaxChunk);
  GenerateResult result;
  Sampler sampler(options.sampling, model_.device());
  using clock = std::chrono::steady_clock;

  // Reuse the cached prefix. A KV cache can roll back: at least the last prompt token is fed
  // again to get its logits. A recurrent state cannot: it continues only when the prompt strictly
  // extends every token it has consumed, and otherwise starts over.
  size_t common = 0;
  while (common < cached_.size() && common < prompt.size() && cached_[common] == prompt[common])
    ++common;
  size_t start = std::min(common, prompt.size() - 1);
  if (model_.recurrent() && start != cached_.size()) start = 0;  // position 0 starts over
  result.reused_tokens = static_cast<int64_t>(start);
  cached_.assign(prompt.begin(), prompt.begin() + start);

  // Logits stay on the device; only the sampled token (and, when asked, the top log-probs)
  // comes back.
  auto next_token = [&](const Tensor& logits) {
    if (options.top_logprobs > 0)
      result.top_logprobs.push_back(
          Sampler::top_logprobs(logits.to_vector<float>(), options.top_logprobs));
    return sampler.sample(logits);
  };
  auto t0 = clock::now();
  Tensor logits;
  for (size_t pos = start; pos < prompt.size(); pos += options.chunk) {
    size_t n = std::min<size_t>(options.chunk, prompt.size() - pos);
    if (pos + n < prompt.size())  // only the last chunk's logits are used
      model_.prefill(prompt.subspan(pos, n), static_cast<int64_t>(pos));
    else
      logits = model_.forward(prompt.subspan(pos, n), static_cast<int64_t>(pos));
    cached_.insert(cached_.end(), prompt.begin() + pos, prompt.begin() + pos + n);
  }
  // Prefill ends when the first token is known (reading it waits for the device).
  int32_t tok = options.max_tokens > 0 ? next_token(logits) : -1;
  auto t1 = clock::now();
  result.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

  for (int64_t i = 0; i < options.max_tokens; ++i) {
    if (i > 0) tok = next_token(logits);
    result.tokens.push_back(tok);
    bool go_on = !on_token || on_token(tok);
    if (!go_on || (options.is_stop && options.is_stop(tok))) break;
    if (static_cast<int64_t>(cached_.size()) >= ctx || i + 1 == options.max_tokens) break;
    int32_t one[] = {tok};
    logits = model_.forward(one, static_cast<int64_t>(cached_.size()));
    cached_.push_back(tok);
  }
  result.decode_seconds = std::chrono::duration<double>(clock::now() - t1).count();
  return result;
}

}  // namespace ugrad::llm
