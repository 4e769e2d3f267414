#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "base/error.h"
#include "schedule/memory_plan.h"

using namespace ugrad;

namespace {

// The oracle: every pair of buffers alive at a common step occupies disjoint bytes, every offset
// is aligned, and every buffer lies inside the arena. Quadratic on purpose: it shares no code with
// the planner.
void check_plan(const std::vector<BufferLifetime>& buffers, const MemoryPlan& plan) {
  REQUIRE(plan.offsets.size() == buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLifetime& a = buffers[i];
    CHECK(plan.offsets[i] % a.alignment == 0);
    CHECK(plan.alignment % a.alignment == 0);
    CHECK(plan.offsets[i] + a.size <= plan.arena_size);
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const BufferLifetime& b = buffers[j];
      if (a.size == 0 || b.size == 0) continue;
      bool share_step = false;
      for (int64_t s = a.first_step; s <= a.last_step && !share_step; ++s)
        share_step = b.first_step <= s && s <= b.last_step;
      if (!share_step) continue;
      const bool disjoint = plan.offsets[i] + a.size <= plan.offsets[j] ||
                            plan.offsets[j] + b.size <= plan.offsets[i];
      if (!disjoint)
        FAIL_CHECK("buffers " << i << " and " << j << " overlap: [" << plan.offsets[i] << ", +"
                              << a.size << ") and [" << plan.offsets[j] << ", +" << b.size << ")");
    }
  }
}

// Live bytes at each step, counted by brute force.
size_t brute_peak(const std::vector<BufferLifetime>& buffers) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (auto& b : buffers) lo = std::min(lo, b.first_step), hi = std::max(hi, b.last_step);
  size_t peak = 0;
  for (int64_t s = lo; s <= hi; ++s) {
    size_t live = 0;
    for (auto& b : buffers)
      if (b.first_step <= s && s <= b.last_step) live += b.size;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<BufferLifetime> random_instance(std::mt19937_64& rng, int n, int steps) {
  std::vector<BufferLifetime> out;
  std::uniform_int_distribution<int> step(0, steps - 1);
  std::uniform_int_distribution<int> log_size(0, 16);
  std::uniform_int_distribution<int> pick(0, 9);
  for (int i = 0; i < n; ++i) {
    int a = step(rng), b = step(rng);
    if (pick(rng) < 6) b = a + pick(rng) % 3;  // most intermediates are short-lived
    BufferLifetime buf;
    buf.first_step = std::min(a, b);
    buf.last_step = std::max(a, b);
    buf.size = pick(rng) == 0 ? 0 : (size_t{1} << log_size(rng)) + (rng() % 100) * 4;
    buf.alignment = size_t{1} << (pick(rng) % 7);
    out.push_back(buf);
  }
  return out;
}

}  // namespace

TEST_SUITE("memory_plan") {
  TEST_CASE("empty input, single buffer, single step") {
    MemoryPlan empty = plan_memory({});
    CHECK(empty.arena_size == 0);
    CHECK(empty.offsets.empty());
    std::vector<BufferLifetime> one = {{100, 16, 3, 3}};
    MemoryPlan p = plan_memory(one);
    CHECK(p.offsets == std::vector<size_t>{0});
    CHECK(p.arena_size == 100);
    // Everything alive at the single step: the arena is at least the sum.
    std::vector<BufferLifetime> same_step = {{100, 1, 0, 0}, {200, 1, 0, 0}, {50, 1, 0, 0}};
    MemoryPlan q = plan_memory(same_step);
    check_plan(same_step, q);
    CHECK(q.arena_size == 350);
  }

  TEST_CASE("steps at the ends of the int64 range") {
    std::vector<BufferLifetime> buffers = {{64, 8, INT64_MIN, INT64_MAX},
                                           {32, 8, INT64_MAX, INT64_MAX},
                                           {16, 8, INT64_MIN, INT64_MIN}};
    MemoryPlan p = plan_memory(buffers);
    CHECK(peak_live_bytes(buffers) == 96);
    CHECK(p.arena_size == 96);
    CHECK(p.offsets[1] != p.offsets[0]);
  }

  TEST_CASE("zero-size buffers take no space") {
    std::vector<BufferLifetime> buffers = {{0, 64, 0, 5}, {128, 64, 0, 5}, {0, 1, 2, 2}};
    MemoryPlan p = plan_memory(buffers);
    check_plan(buffers, p);
    CHECK(p.arena_size == 128);
  }

  TEST_CASE("disjoint lifetimes all share offset 0: arena = largest buffer") {
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < 10; ++i) buffers.push_back({size_t(100 + 37 * i), 4, i, i});
    MemoryPlan p = plan_memory(buffers);
    check_plan(buffers, p);
    CHECK(p.arena_size == 100 + 37 * 9);
    for (size_t off : p.offsets) CHECK(off == 0);
  }

  TEST_CASE("a chain of producer/consumer pairs needs two slots") {
    // Step i reads buffer i-1 and writes buffer i: neighbours overlap, others do not.
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < 20; ++i) buffers.push_back({1024, 64, i, i + 1});
    MemoryPlan p = plan_memory(buffers);
    check_plan(buffers, p);
    CHECK(p.arena_size == 2048);
  }

  TEST_CASE("alignment is respected and reported") {
    std::vector<BufferLifetime> buffers = {{3, 1, 0, 1}, {5, 256, 0, 1}, {7, 64, 1, 2}};
    MemoryPlan p = plan_memory(buffers);
    check_plan(buffers, p);
    CHECK(p.alignment == 256);
  }

  TEST_CASE("bad input is an Error naming the buffer") {
    std::vector<BufferLifetime> bad_align = {{8, 1, 0, 0}, {8, 3, 0, 0}};
    CHECK_THROWS_WITH_AS(plan_memory(bad_align), doctest::Contains("buffer 1 has alignment 3"),
                         Error);
    std::vector<BufferLifetime> zero_align = {{8, 0, 0, 0}};
    CHECK_THROWS_AS(plan_memory(zero_align), Error);
    std::vector<BufferLifetime> backwards = {{8, 1, 5, 4}};
    CHECK_THROWS_WITH_AS(plan_memory(backwards), doctest::Contains("step 4, before"), Error);
    std::vector<BufferLifetime> overflow = {{SIZE_MAX / 2, 1, 0, 0}, {SIZE_MAX / 2, 1, 0, 0}};
    CHECK_THROWS_AS(plan_memory(overflow), Error);
  }

  TEST_CASE("peak_live_bytes matches brute force") {
    std::mt19937_64 rng(1);
    for (int rep = 0; rep < 50; ++rep) {
      auto buffers = random_instance(rng, 1 + rep, 30);
      CHECK(peak_live_bytes(buffers) == brute_peak(buffers));
    }
  }

  TEST_CASE("random instances: valid plans, arena between the lower bound and a small factor") {
    std::mt19937_64 rng(12345);
    double ratio_sum = 0, worst = 1;
    int counted = 0;
    for (int rep = 0; rep < 300; ++rep) {
      const int n = 1 + rep % 60, steps = 1 + rep % 40;
      auto buffers = random_instance(rng, n, steps);
      MemoryPlan p = plan_memory(buffers);
      check_plan(buffers, p);
      const size_t lower = peak_live_bytes(buffers);
      CHECK(p.arena_size >= lower);
      if (lower > 0) {
        const double ratio = static_cast<double>(p.arena_size) / static_cast<double>(lower);
        ratio_sum += ratio;
        worst = std::max(worst, ratio);
        ++counted;
        CHECK(ratio < 2.0);
      }
      // Deterministic: the same input gives the same plan.
      CHECK(plan_memory(buffers).offsets == p.offsets);
    }
    const double average = ratio_sum / counted;
    MESSAGE("arena / peak live bytes over " << counted << " random instances: average " << average
                                            << ", worst " << worst);
    CHECK(average < 1.25);
  }
}
