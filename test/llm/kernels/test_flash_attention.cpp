// The flash-attention kernels (llm/kernels/flash_attention.h) on the default device (CTest runs it
// again on DEV=AMD through the gfx1100 emulator): against a causal double softmax, with the
// cache's rows past the last row's position poisoned (NaN, infinities), head dims 64, 128 and
// 256, groups of 1 to 6 query heads, chunks of 1, 5 and 32 rows, start positions at and around
// the 32-position splits, past 1000 and at 4096; and a freshly allocated cache (NaN-filled under
// the emulator) written only up to the rows' positions.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "llm/kernels/attention.h"
#include "llm/kernels/flash_attention.h"
#include "schedule/schedule.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

struct Case {
  int64_t heads, kv_heads, hd, capacity;
};

// Caches (kv_heads, capacity, hd) of halves: normal values at positions <= last, `poison` past.
std::vector<float> cache(const Case& c, int64_t last, float poison, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(c.kv_heads * c.capacity * c.hd));
  for (int64_t h = 0; h < c.kv_heads; ++h)
    for (int64_t p = 0; p < c.capacity; ++p)
      for (int64_t d = 0; d < c.hd; ++d)
        v[(h * c.capacity + p) * c.hd + d] =
            p <= last ? static_cast<float>(static_cast<_Float16>(normal(rng))) : poison;
  return v;
}

// Causal softmax(q k^T / sqrt(hd)) v in double, row r at position start_pos + r:
// (rows * heads * hd).
std::vector<double> reference(const Case& c, int64_t rows, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              int64_t start_pos) {
  const int64_t group = c.heads / c.kv_heads;
  std::vector<double> out(static_cast<size_t>(rows * c.heads * c.hd));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kvh = h / group, last = start_pos + r;
      const float* qh = &q[(r * c.heads + h) * c.hd];
      std::vector<double> s(static_cast<size_t>(last + 1));
      double m = -INFINITY, sum = 0;
      for (int64_t p = 0; p <= last; ++p) {
        double dot = 0;
        for (int64_t d = 0; d < c.hd; ++d)
          dot += double(qh[d]) * k[(kvh * c.capacity + p) * c.hd + d];
        s[p] = dot / std::sqrt(double(c.hd));
        m = std::max(m, s[p]);
      }
      for (double& x : s) sum += (x = std::exp(x - m));
      for (int64_t d = 0; d < c.hd; ++d) {
        double acc = 0;
        for (int64_t p = 0; p <= last; ++p) acc += s[p] * v[(kvh * c.capacity + p) * c.hd + d];
        out[(r * c.heads + h) * c.hd + d] = acc / sum;
      }
    }
  return out;
}

// The kernels' output for `rows` rows at start_pos, the cache poisoned past the last row.
std::vector<float> run(const Case& c, int64_t rows, const std::vector<float>& q, int64_t start_pos,
                       float poison) {
  const std::string device = knob_str(Knob::DEV);
  const int64_t last = start_pos + rows - 1;
  Tensor qt = Tensor::from_vector(q, {rows, c.heads, c.hd}, dtypes::float32, device);
  Tensor k = Tensor::from_vector(cache(c, last, poison, 1), {c.kv_heads, c.capacity, c.hd},
                                 dtypes::float16, device);
  Tensor v = Tensor::from_vector(cache(c, last, poison, 2), {c.kv_heads, c.capacity, c.hd},
                                 dtypes::float16, device);
  // The variable's range leaves room for the rows, as a model's does (its chunk padding).
  UOp sp = bind_variable(UOp::variable("start_pos", 0, c.capacity - 32), start_pos);
  return flash_attention(qt, k, v, sp).to_vector<float>();
}

}  // namespace

TEST_CASE("flash_attention: matches a causal double softmax, the cache poisoned past the rows") {
  const Case cases[] = {
      {4, 2, 64, 80}, {8, 2, 128, 100}, {6, 1, 256, 70}, {2, 2, 128, 1100}, {2, 1, 64, 4128}};
  for (const Case& c : cases) {
    CAPTURE(c.heads);
    CAPTURE(c.kv_heads);
    CAPTURE(c.hd);
    for (int64_t rows : {1, 5, 32}) {
      if (c.capacity > 1000 && rows == 5) continue;  // the long contexts: decode and a chunk
      CAPTURE(rows);
      std::mt19937 rng(7);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> q(static_cast<size_t>(rows * c.heads * c.hd));
      for (float& x : q) x = normal(rng);
      std::vector<int64_t> positions{0, 5, 31, 32, 33, c.capacity - 32};
      if (c.capacity > 1000) positions = {1000, 1050};
      if (c.capacity > 4000) positions = {4095};  // a 4096-position context: 128 splits
      // A chunk runs on WMMA tiles: q is rounded to f16 (the reference does so too), and so are
      // the weights (not the sum they are divided by): each output moves by at most 2^-11 of
      // the largest value it weighs.
      const bool wmma = rows > 1;
      std::vector<float> q_in = q;
      if (wmma)
        for (float& x : q_in) x = static_cast<float>(static_cast<_Float16>(x));
      for (int64_t sp : positions) {
        CAPTURE(sp);
        const int64_t last = sp + rows - 1;
        const std::vector<float> values = cache(c, last, 0, 2);
        const std::vector<double> want = reference(c, rows, q_in, cache(c, last, 0, 1), values, sp);
        double vmax = 0;
        for (float x : values) vmax = std::max(vmax, double(std::fabs(x)));
        const double tol = 2e-5 + (wmma ? std::ldexp(vmax, -11) : 0.0);
        const std::vector<float> clean = run(c, rows, q, sp, 0.0f);
        REQUIRE(clean.size() == want.size());
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i)
          worst = std::max(worst, std::fabs(clean[i] - want[i]));
        CHECK(worst < tol);
        // Rows of the cache past the last row change nothing, bit for bit, whatever they hold.
        if (last + 1 < c.capacity)
          for (float poison : {std::numeric_limits<float>::quiet_NaN(), INFINITY, 1e4f})
            CHECK(run(c, rows, q, sp, poison) == clean);
      }
    }
  }
}

TEST_CASE("flash_attention: a freshly allocated cache written up to the rows' positions") {
  // Tensor::empty is uninitialised (the emulator fills fresh allocations with a NaN pattern):
  // only the positions up to the last row's are written, as a model fills its cache.
  const Case c{4, 2, 128, 100};
  const std::string device = knob_str(Knob::DEV);
  for (int64_t rows : {1, 32}) {
    CAPTURE(rows);
    const int64_t sp = 37, last = sp + rows - 1;
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> q(static_cast<size_t>(rows * c.heads * c.hd));
    for (float& x : q) x = normal(rng);
    Tensor caches[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<float> full = cache(c, last, 0, 1 + side), filled;
      for (int64_t h = 0; h < c.kv_heads; ++h)
        filled.insert(filled.end(), full.begin() + h * c.capacity * c.hd,
                      full.begin() + (h * c.capacity + last + 1) * c.hd);
      caches[side] = Tensor::empty({c.kv_heads, c.capacity, c.hd}, dtypes::float16, device);
      caches[side].realize();
      caches[side]
          .shrink({{0, c.kv_heads}, {0, last + 1}, {0, c.hd}})
          .assign(
              Tensor::from_vector(filled, {c.kv_heads, last + 1, c.hd}, dtypes::float32, device))
          .realize();
    }
    UOp var = bind_variable(UOp::variable("start_pos", 0, c.capacity - 32), sp);
    Tensor qt = Tensor::from_vector(q, {rows, c.heads, c.hd}, dtypes::float32, device);
    CHECK(flash_attention(qt, caches[0], caches[1], var).to_vector<float>() ==
          run(c, rows, q, sp, 0.0f));
  }
}

TEST_CASE("flash_attention: the shapes it takes, and a clear error for others") {
  const DeviceFeatures gfx = device_features("NULL:gfx1100");
  CHECK(select(gfx, flash_attention_needs(32, 8, 128)));
  CHECK(select(gfx, flash_attention_needs(16, 16, 64)));
  CHECK(!flash_attention_needs(12, 8, 128));               // not a whole group
  CHECK(!flash_attention_needs(64, 4, 128));               // a group of 16 waves
  CHECK(!flash_attention_needs(8, 8, 100));                // not whole waves of value dims
  CHECK(!select(gfx, flash_attention_needs(8, 1, 2048)));  // its tile exceeds the LDS
  CHECK_THROWS_WITH_AS(flash_attention_split_kernel(1, 12, 8, 128, 64, 63, gfx),
                       doctest::Contains("12 heads over 8 KV heads of 128"), Error);
  CHECK_THROWS_WITH_AS(flash_attention_split_kernel(32, 32, 8, 128, 64, 40, gfx),
                       doctest::Contains("32 rows at positions up to 40 in a cache of 64"), Error);
}
