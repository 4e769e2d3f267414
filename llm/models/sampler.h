// Token sampling on the device: greedy, temperature, top-k, top-p and min-p, seeded and
// reproducible. The whole pipeline is tensor ops captured once in a JIT graph; per token only
// the int32 token id is read back.
//
// Pipeline (temperature > 0), with q = exp((logits - max) / temperature), so that
// p = q / sum(q) = softmax(logits / temperature) and max(q) = 1:
//   1. top-k: keep q >= t_k, t_k the largest t with count(q >= t) >= k;
//   2. top-p: keep q >= t_p, t_p the largest t with sum(q >= t, kept by 1) >= top_p * sum(kept
//      by 1), i.e. the smallest set of most likely tokens whose mass reaches top_p;
//   3. min-p: keep p >= min_p * p_max, i.e. q >= min_p;
//   4. draw by Gumbel-max, in its exponential-race form: the argmax over the kept tokens of
//      q / -log(u) (= argmax of log(q) - log(-log(u))), u uniform in (0, 1), one u per token.
// This is llama.cpp's order of the three filters (each sees what the previous kept), applied to
// the tempered probabilities. Tokens tied with the one at a threshold are all kept. Thresholds
// are found without a sort: by bisection over the bit pattern of q (non-negative float32 bits
// order like the floats), one reduction per bit. Filters that are off (top_k 0 or >= vocab,
// top_p 1, min_p 0) add no kernels.
//
// The uniforms come from a counter-based hash on the device (murmur3_32 of the words
// (seed high, step, token id) under the key seed low), where `step` counts the calls and is a JIT
// variable: the captured graph is replayed for every token. The same seed gives the same
// sequence of tokens; the uniforms are bit-identical on every device.
//
// One captured graph per (device, vocab, filters in use) serves every Sampler: the seed and the
// option values are data. Logits with a NaN or a +inf, or with every entry -inf, are an Error.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

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
  /// Validates the options (an Error names the bad one); nothing touches the device until the
  /// first sample().
  Sampler(SamplingOptions options, std::string device);
  /// An Error unless the options are valid.
  static void validate(const SamplingOptions& options);
  /// The next token for `logits`: vocab float32 values, (1, vocab) or (vocab), on the sampler's
  /// device, realized into a buffer of their own (a view into part of one is an Error).
  int32_t sample(const Tensor& logits);
  /// Captures the graph for `vocab` with two draws from zero logits, so that sample() on any
  /// Sampler with the same device, vocab and filters in use neither schedules nor compiles. The
  /// tokens sample() returns are unchanged.
  void warm_up(int64_t vocab);
  /// The k most likely tokens and their log-probabilities (log-softmax of the raw logits).
  static std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, int k);

 private:
  int32_t draw(const Tensor& logits, int64_t step);

  SamplingOptions opt_;
  std::string device_;
  int64_t step_ = 0;  // calls so far: the hash counter
  Tensor params_;     // the seed and the options on the device, made by the first call
};

}  // namespace ugrad::llm
