#include "llm/models/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "uop/error.h"

namespace ugrad::llm {
namespace {

// splitmix64: a small counter-based generator, identical on every platform.
uint64_t next_u64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

Sampler::Sampler(SamplingOptions options) : opt_(options), state_(options.seed) {
  if (opt_.temperature < 0) fail("sampling: temperature {} is negative", opt_.temperature);
  if (opt_.top_k < 0) fail("sampling: top-k {} is negative", opt_.top_k);
  if (!(opt_.top_p > 0 && opt_.top_p <= 1)) fail("sampling: top-p {} is not in (0, 1]", opt_.top_p);
  if (!(opt_.min_p >= 0 && opt_.min_p < 1)) fail("sampling: min-p {} is not in [0, 1)", opt_.min_p);
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) fail("sampling: no logits");
  if (opt_.temperature == 0) return argmax(logits);
  // Candidates sorted by logit, then cut by top-k, min-p and top-p.
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (opt_.top_k > 0 && static_cast<size_t>(opt_.top_k) < ids.size()) ids.resize(opt_.top_k);
  const double max_logit = logits[ids[0]];
  if (!std::isfinite(max_logit)) fail("sampling: the logits are not finite");
  std::vector<double> p(ids.size());
  double total = 0;
  for (size_t i = 0; i < ids.size(); ++i)
    total += p[i] = std::exp((logits[ids[i]] - max_logit) / opt_.temperature);
  size_t keep = ids.size();
  if (opt_.min_p > 0)
    while (keep > 1 && p[keep - 1] < opt_.min_p * p[0]) --keep;
  if (opt_.top_p < 1) {
    double cum = 0;
    for (size_t i = 0; i < keep; ++i) {
      cum += p[i] / total;
      if (cum >= opt_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = std::accumulate(p.begin(), p.begin() + keep, 0.0);
  double u = static_cast<double>(next_u64(state_) >> 11) * 0x1.0p-53 * kept;
  for (size_t i = 0; i < keep; ++i) {
    u -= p[i];
    if (u < 0) return ids[i];
  }
  return ids[keep - 1];
}

std::vector<std::pair<int32_t, float>> Sampler::top_logprobs(std::span<const float> logits, int k) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (float l : logits) total += std::exp(l - max_logit);
  const double log_z = max_logit + std::log(total);
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < n; ++i)
    out.emplace_back(ids[i], static_cast<float>(logits[ids[i]] - log_z));
  return out;
}

}  // namespace ugrad::llm
