// The device sampler against host oracles: a scalar argmax for greedy, the exact filtered and
// renormalised distribution computed in double by sorting (an algorithm independent of the
// sampler's bisection) for the kept sets and the empirical frequencies.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "llm/models/sampler.h"
#include "runtime/jit.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

const char* const kDevice = "CPU";

Tensor device_logits(const std::vector<float>& logits) {
  Tensor t = Tensor::from_vector(logits, {1, static_cast<int64_t>(logits.size())}, dtypes::float32,
                                 kDevice);
  t.realize();
  return t;
}

// The lowest id among equal maxima.
int32_t host_argmax(const std::vector<float>& logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  return best;
}

// The distribution the sampler draws from, in double: softmax(logits / T), then top-k, top-p and
// min-p in that order, each keeping every token tied with the one at its cut, then renormalised.
std::vector<double> reference_distribution(const std::vector<float>& logits,
                                           const SamplingOptions& o) {
  const size_t n = logits.size();
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> q(n);
  for (size_t i = 0; i < n; ++i) q[i] = std::exp((logits[i] - max_logit) / o.temperature);
  std::vector<double> sorted = q;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double cut = 0;  // keep q >= cut
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < n) cut = sorted[o.top_k - 1];
  if (o.top_p < 1) {
    double total = 0;
    for (double v : sorted)
      if (v >= cut) total += v;
    double mass = 0;
    for (double v : sorted) {
      mass += v;
      if (mass >= o.top_p * total) {
        cut = std::max(cut, v);
        break;
      }
    }
  }
  cut = std::max(cut, static_cast<double>(o.min_p));  // max(q) = 1
  std::vector<double> p(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += p[i] = q[i] >= cut ? q[i] : 0.0;
  for (double& v : p) v /= total;
  return p;
}

std::vector<int64_t> draw_counts(Sampler& sampler, const Tensor& logits, int draws) {
  std::vector<int64_t> counts(static_cast<size_t>(logits.numel()));
  for (int i = 0; i < draws; ++i) {
    int32_t t = sampler.sample(logits);
    REQUIRE(t >= 0);
    REQUIRE(t < logits.numel());
    ++counts[t];
  }
  return counts;
}

// Pearson's chi-square of the counts against `p`, infinite if a token of probability 0 appears.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int draws) {
  double chi2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    double expected = p[i] * draws;
    if (expected == 0) {
      if (counts[i] != 0) return INFINITY;
      continue;
    }
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

std::vector<float> random_logits(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

SamplingOptions options(float temperature, int32_t top_k, float top_p, float min_p,
                        uint64_t seed = 1) {
  SamplingOptions o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.min_p = min_p;
  o.seed = seed;
  return o;
}

// Logits whose softmax at temperature 1 is `p`.
std::vector<float> logits_of(const std::vector<double>& p) {
  std::vector<float> l;
  for (double v : p) l.push_back(static_cast<float>(std::log(v)));
  return l;
}

}  // namespace

TEST_CASE("greedy is the host argmax, lowest id among ties, top-k 1 is greedy") {
  for (uint32_t seed : {1u, 2u, 3u}) {
    std::vector<float> logits = random_logits(1000, 3.0f, seed);
    Sampler greedy(SamplingOptions{}, kDevice);
    CHECK(greedy.sample(device_logits(logits)) == host_argmax(logits));
  }
  std::vector<float> tied{0.5f, 2.0f, -1.0f, 2.5f, 0.0f, 2.5f, 2.5f, 1.0f};
  Sampler greedy(SamplingOptions{}, kDevice);
  CHECK(greedy.sample(device_logits(tied)) == 3);
  // A temperature so small that 1 / temperature overflows float: uniform over the tied maxima.
  Sampler cold(options(1e-40f, 0, 1, 0), kDevice);
  std::set<int32_t> seen;
  for (int i = 0; i < 40; ++i) seen.insert(cold.sample(device_logits(tied)));
  CHECK(seen == std::set<int32_t>{3, 5, 6});
  for (float temperature : {0.3f, 1.0f, 5.0f}) {
    std::vector<float> logits = random_logits(500, 1.0f, 7);
    Sampler top1(options(temperature, 1, 1, 0), kDevice);
    Tensor t = device_logits(logits);
    for (int i = 0; i < 20; ++i) CHECK(top1.sample(t) == host_argmax(logits));
  }
}

TEST_CASE("the filters keep exactly their sets, ties at the cut included") {
  struct Case {
    const char* name;
    std::vector<float> logits;
    SamplingOptions options;
    std::set<int32_t> kept;
  };
  const std::vector<float> ranked = logits_of({0.05, 0.3, 0.1, 0.2, 0.1, 0.15, 0.05, 0.05});
  const std::vector<Case> cases{
      // top-k 3: 0.3, 0.2, 0.15.
      {"top-k", ranked, options(1, 3, 1, 0), {1, 3, 5}},
      // top-k 4: the 4th largest, 0.1, is tied (ids 2 and 4): both kept.
      {"top-k tie", ranked, options(1, 4, 1, 0), {1, 2, 3, 4, 5}},
      // top-p 0.6: 0.3 + 0.2 = 0.5 < 0.6 <= 0.65 with 0.15.
      {"top-p", ranked, options(1, 0, 0.6f, 0), {1, 3, 5}},
      // top-p 0.7: the mass reaches 0.75 at a 0.1, tied with the other 0.1: both kept.
      {"top-p tie", ranked, options(1, 0, 0.7f, 0), {1, 2, 3, 4, 5}},
      // min-p 0.4: p >= 0.12.
      {"min-p", ranked, options(1, 0, 1, 0.4f), {1, 3, 5}},
      // min-p 0.3: p >= 0.09, both 0.1 kept.
      {"min-p tie", ranked, options(1, 0, 1, 0.3f), {1, 2, 3, 4, 5}},
      // top-k 5 keeps 0.3 0.2 0.15 0.1 0.1 (mass 0.85); top-p 0.55 of that is 0.4675: 0.3 + 0.2.
      {"top-k then top-p", ranked, options(1, 5, 0.55f, 0), {1, 3}},
      // Temperature 0.5 squares and renormalises: 0.09 0.04 0.0225 0.01 ...; min-p 0.2 of 0.09 is
      // 0.018: the 0.15 survives, the 0.1s (0.01) do not.
      {"temperature then min-p", ranked, options(0.5f, 0, 1, 0.2f), {1, 3, 5}},
      // All three: top-k 5 drops the 0.05s; top-p 0.7 of the remaining 0.85 is 0.595, reached
      // at 0.15; min-p 0.6 keeps p >= 0.18.
      {"all three", ranked, options(1, 5, 0.7f, 0.6f), {1, 3}},
      // -inf logits are never drawn, even with every filter off.
      {"-inf", {-INFINITY, 0.0f, -INFINITY, 0.5f}, options(1, 0, 1, 0), {1, 3}},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.name));
    Sampler sampler(c.options, kDevice);
    std::vector<int64_t> counts = draw_counts(sampler, device_logits(c.logits), 1000);
    for (size_t i = 0; i < counts.size(); ++i) {
      CAPTURE(i);
      CHECK((counts[i] > 0) == (c.kept.count(static_cast<int32_t>(i)) == 1));
    }
    // The oracle agrees on the set.
    std::vector<double> p = reference_distribution(c.logits, c.options);
    for (size_t i = 0; i < p.size(); ++i) CHECK((p[i] > 0) == (c.kept.count(i) == 1));
  }
}

TEST_CASE("draw frequencies match the exact filtered distribution") {
  constexpr int kDraws = 4000;
  // chi-square with at most 15 degrees of freedom: 0.999999 quantile is about 52.
  constexpr double kChiSquareBound = 60;
  const std::vector<float> logits = random_logits(16, 1.5f, 11);
  const Tensor t = device_logits(logits);
  for (const SamplingOptions& o :
       {options(0.7f, 0, 1, 0, 5), options(1.5f, 8, 1, 0, 6), options(1, 0, 0.8f, 0, 7),
        options(0.8f, 0, 1, 0.05f, 8), options(1.2f, 10, 0.9f, 0.02f, 9)}) {
    CAPTURE(o.temperature);
    CAPTURE(o.top_k);
    CAPTURE(o.top_p);
    CAPTURE(o.min_p);
    Sampler sampler(o, kDevice);
    std::vector<int64_t> counts = draw_counts(sampler, t, kDraws);
    std::vector<double> p = reference_distribution(logits, o);
    CHECK(chi_square(counts, p, kDraws) < kChiSquareBound);
    // The bound has power: a sampler that ignored the temperature would fail it.
    SamplingOptions wrong = o;
    wrong.temperature = 2 * o.temperature;
    CHECK(chi_square(counts, reference_distribution(logits, wrong), kDraws) > kChiSquareBound);
  }
}

TEST_CASE("the same seed gives the same tokens, other seeds others") {
  const Tensor t = device_logits(random_logits(64, 1.0f, 3));
  auto run = [&](uint64_t seed) {
    Sampler s(options(1, 0, 1, 0, seed), kDevice);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 40; ++i) tokens.push_back(s.sample(t));
    return tokens;
  };
  std::vector<int32_t> a = run(42);
  // (vocab) logits work as (1, vocab) ones, through the same graph.
  Sampler flat(options(1, 0, 1, 0, 42), kDevice);
  CHECK(flat.sample(t) == a[0]);
  CHECK(flat.sample(t.reshape({64})) == a[1]);
  CHECK(a == run(42));
  CHECK(a != run(43));
  CHECK(a != run(42 + (uint64_t{1} << 32)));  // the seed's high word counts
  // The tokens of one run vary from step to step.
  CHECK(std::set<int32_t>(a.begin(), a.end()).size() > 10);
}

TEST_CASE("a Qwen-sized vocab: greedy and all filters, replayed without scheduling") {
  constexpr int64_t kVocab = 151936;
  std::vector<float> logits = random_logits(kVocab, 2.0f, 5);
  const Tensor t = device_logits(logits);
  const SamplingOptions full = options(0.8f, 40, 0.95f, 0.05f, 3);
  std::vector<double> p = reference_distribution(logits, full);
  for (const SamplingOptions& o : {SamplingOptions{}, full}) {
    Sampler sampler(o, kDevice);
    constexpr int kWarmup = 2, kTimed = 10;
    for (int i = 0; i < kWarmup; ++i) sampler.sample(t);
    JitStats before = jit_stats();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kTimed; ++i) {
      int32_t token = sampler.sample(t);
      if (o.temperature == 0)
        CHECK(token == host_argmax(logits));
      else
        CHECK(p[token] > 0);
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        kTimed;
    CHECK(jit_stats().schedules == before.schedules);
    CHECK(jit_stats().compiles == before.compiles);
    std::string what = o.temperature == 0 ? "greedy" : "top-k+top-p+min-p";
    MESSAGE("vocab " << kVocab << " " << what << ": " << ms << " ms per token");
  }
}

TEST_CASE("warm_up captures the graph, which samplers with the same filters in use share") {
  const Tensor t = device_logits(random_logits(48, 1.0f, 4));
  const SamplingOptions o = options(0.9f, 5, 0.9f, 0.05f, 1);
  Sampler warm(o, kDevice);
  warm.warm_up(48);
  JitStats before = jit_stats();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 20; ++i) tokens.push_back(warm.sample(t));
  // Another seed and other values of the same filters: no scheduling, no compiling either.
  const SamplingOptions o2 = options(1.7f, 9, 0.6f, 0.2f, 77);
  Sampler other(o2, kDevice);
  std::vector<double> p = reference_distribution(t.to_vector<float>(), o2);
  for (int i = 0; i < 50; ++i) CHECK(p[other.sample(t)] > 0);
  CHECK(jit_stats().schedules == before.schedules);
  CHECK(jit_stats().compiles == before.compiles);
  // warm_up did not move the token stream.
  Sampler cold(o, kDevice);
  std::vector<int32_t> again;
  for (int i = 0; i < 20; ++i) again.push_back(cold.sample(t));
  CHECK(tokens == again);
}

TEST_CASE("invalid options are errors that name the option") {
  auto bad = [](SamplingOptions o, const char* what) {
    CHECK_THROWS_WITH_AS(Sampler(o, kDevice), doctest::Contains(what), Error);
  };
  bad(options(-1, 0, 1, 0), "temperature -1");
  bad(options(NAN, 0, 1, 0), "temperature");
  bad(options(1, -2, 1, 0), "top-k -2");
  bad(options(1, 0, 0, 0), "top-p 0");
  bad(options(1, 0, 1.5f, 0), "top-p 1.5");
  bad(options(1, 0, 1, -0.1f), "min-p -0.1");
  bad(options(1, 0, 1, 2), "min-p 2");
  CHECK_NOTHROW(Sampler(options(1, 5, 1, 1), kDevice));
}

TEST_CASE("logits that view part of a buffer are an error, not a wrong replay") {
  Tensor rows = Tensor::from_vector(random_logits(32, 1.0f, 9), {2, 16}, dtypes::float32, kDevice);
  rows.realize();
  Sampler s(SamplingOptions{}, kDevice);
  CHECK_THROWS_WITH_AS(s.sample(rows.shrink({{1, 2}, {0, 16}})),
                       doctest::Contains("buffer of 32 elements"), Error);
}

TEST_CASE("logits with a NaN or +inf, or all -inf, are errors") {
  for (float temperature : {0.0f, 1.0f}) {
    CAPTURE(temperature);
    for (const std::vector<float>& logits :
         {std::vector<float>{0, NAN, 1}, std::vector<float>{0, INFINITY, 1},
          std::vector<float>(4, -INFINITY)}) {
      Sampler s(options(temperature, 2, 0.9f, 0.1f), kDevice);
      CHECK_THROWS_WITH_AS(s.sample(device_logits(logits)), doctest::Contains("NaN"), Error);
    }
  }
}
