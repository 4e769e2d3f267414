// The flash-decode attention kernels (llm/kernels/attention_decode.h) on the default device (CTest
// runs it again on DEV=AMD through the gfx1100 emulator): against a double softmax over the
// valid positions, with the cache's rows past them poisoned (NaN, infinities), head dims 64,
// 128 and 256, groups of 1 to 6 query heads, and positions at and around the 32-position splits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "llm/kernels/attention.h"
#include "llm/kernels/attention_decode.h"
#include "schedule/schedule.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

struct Case {
  int64_t heads, kv_heads, hd, capacity;
};

// Caches (kv_heads, capacity, hd) of halves: normal values at positions <= start_pos, `poison`
// past them.
std::vector<float> cache(const Case& c, int64_t start_pos, float poison, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(c.kv_heads * c.capacity * c.hd));
  for (int64_t h = 0; h < c.kv_heads; ++h)
    for (int64_t p = 0; p < c.capacity; ++p)
      for (int64_t d = 0; d < c.hd; ++d)
        v[(h * c.capacity + p) * c.hd + d] =
            p <= start_pos ? static_cast<float>(static_cast<_Float16>(normal(rng))) : poison;
  return v;
}

// softmax(q k^T / sqrt(hd)) v over positions [0, start_pos], in double: (heads * hd).
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              int64_t start_pos) {
  const int64_t group = c.heads / c.kv_heads;
  std::vector<double> out(static_cast<size_t>(c.heads * c.hd));
  for (int64_t h = 0; h < c.heads; ++h) {
    const int64_t kvh = h / group;
    std::vector<double> s(static_cast<size_t>(start_pos + 1));
    double m = -INFINITY, sum = 0;
    for (int64_t p = 0; p <= start_pos; ++p) {
      double dot = 0;
      for (int64_t d = 0; d < c.hd; ++d)
        dot += double(q[h * c.hd + d]) * k[(kvh * c.capacity + p) * c.hd + d];
      s[p] = dot / std::sqrt(double(c.hd));
      m = std::max(m, s[p]);
    }
    for (double& x : s) sum += (x = std::exp(x - m));
    for (int64_t d = 0; d < c.hd; ++d) {
      double acc = 0;
      for (int64_t p = 0; p <= start_pos; ++p) acc += s[p] * v[(kvh * c.capacity + p) * c.hd + d];
      out[h * c.hd + d] = acc / sum;
    }
  }
  return out;
}

// The kernels' output for the case at start_pos with the cache poisoned past it.
std::vector<float> run(const Case& c, const std::vector<float>& q, int64_t start_pos,
                       float poison) {
  const std::string device = knob_str(Knob::DEV);
  Tensor qt = Tensor::from_vector(q, {1, c.heads, c.hd}, dtypes::float32, device);
  Tensor k = Tensor::from_vector(cache(c, start_pos, poison, 1), {c.kv_heads, c.capacity, c.hd},
                                 dtypes::float16, device);
  Tensor v = Tensor::from_vector(cache(c, start_pos, poison, 2), {c.kv_heads, c.capacity, c.hd},
                                 dtypes::float16, device);
  // The variable's range stops short of the cache, as a model's does (its chunk padding).
  UOp sp = bind_variable(UOp::variable("start_pos", 0, c.capacity - 3), start_pos);
  return attention_decode(qt, k, v, sp).to_vector<float>();
}

}  // namespace

TEST_CASE("attention_decode: matches a double softmax, the cache poisoned past the valid rows") {
  const Case cases[] = {
      {4, 2, 64, 80}, {8, 2, 128, 100}, {6, 1, 256, 70}, {2, 2, 128, 1100}, {2, 1, 64, 4100}};
  for (const Case& c : cases) {
    CAPTURE(c.heads);
    CAPTURE(c.kv_heads);
    CAPTURE(c.hd);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> q(static_cast<size_t>(c.heads * c.hd));
    for (float& x : q) x = normal(rng);
    std::vector<int64_t> positions{0, 5, 31, 32, 33, c.capacity - 3};
    if (c.capacity > 1000) positions = {1000, 1050};
    if (c.capacity > 4000) positions = {4095};  // a 4096-position context: 128 splits
    for (int64_t sp : positions) {
      CAPTURE(sp);
      const std::vector<double> want = reference(c, q, cache(c, sp, 0, 1), cache(c, sp, 0, 2), sp);
      const std::vector<float> clean = run(c, q, sp, 0.0f);
      REQUIRE(clean.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) CHECK(std::fabs(clean[i] - want[i]) < 2e-5);
      // Rows past the valid length change nothing, bit for bit, whatever they hold.
      if (sp + 1 < c.capacity)
        for (float poison : {std::numeric_limits<float>::quiet_NaN(), INFINITY, 1e4f})
          CHECK(run(c, q, sp, poison) == clean);
    }
  }
}

TEST_CASE("attention_decode: the shapes it takes, and a clear error for others") {
  CHECK(attention_decode_supports(32, 8, 128));
  CHECK(attention_decode_supports(16, 16, 64));
  CHECK(!attention_decode_supports(12, 8, 128));  // not a whole group
  CHECK(!attention_decode_supports(64, 4, 128));  // a group of 16 waves
  CHECK(!attention_decode_supports(8, 8, 100));   // not whole waves of value dims
  CHECK_THROWS_WITH_AS(attention_decode_split_kernel(12, 8, 128, 64, 63),
                       doctest::Contains("12 heads over 8 KV heads of 128"), Error);
  CHECK_THROWS_WITH_AS(attention_decode_split_kernel(32, 8, 128, 64, 64),
                       doctest::Contains("positions up to 64 in a cache of 64"), Error);
}
