#include "schedule/memory_plan.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include "base/error.h"

namespace ugrad {
namespace {

constexpr size_t kNoOffset = std::numeric_limits<size_t>::max();

size_t align_up(size_t x, size_t alignment) { return (x + alignment - 1) / alignment * alignment; }

// A placed buffer: its lifetime and its bytes [offset, end) in the arena. Kept in one flat array
// so the scan over placed buffers (the planner's inner loop) is sequential.
struct Placed {
  int64_t first_step, last_step;
  size_t offset, end;
};

// Greedy placement in the given order: the tightest gap among time-overlapping placed buffers.
MemoryPlan place_in_order(std::span<const BufferLifetime> buffers,
                          const std::vector<size_t>& order) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), kNoOffset);
  std::vector<Placed> placed;
  std::vector<Placed> live;
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    plan.alignment = std::max(plan.alignment, b.alignment);
    if (b.size == 0) {  // occupies nothing: any aligned offset is fine
      plan.offsets[i] = 0;
      continue;
    }
    live.clear();
    for (const Placed& p : placed)
      if (b.first_step <= p.last_step && p.first_step <= b.last_step) live.push_back(p);
    std::sort(live.begin(), live.end(),
              [](const Placed& x, const Placed& y) { return x.offset < y.offset; });
    size_t best = kNoOffset, best_gap = kNoOffset, cursor = 0;
    for (const Placed& p : live) {
      const size_t start = align_up(cursor, b.alignment);
      if (start + b.size <= p.offset && p.offset - start < best_gap) {
        best = start;
        best_gap = p.offset - start;
      }
      cursor = std::max(cursor, p.end);
    }
    if (best == kNoOffset) best = align_up(cursor, b.alignment);
    plan.offsets[i] = best;
    plan.arena_size = std::max(plan.arena_size, best + b.size);
    placed.push_back({b.first_step, b.last_step, best, best + b.size});
  }
  return plan;
}

// "Greedy by breadth" order: visit the steps where some buffer starts, busiest (most live bytes)
// first, and at each take the buffers alive there that are not taken yet, in `by_size` order. A
// buffer is thus taken at the busiest step of its lifetime: sorting by that step's rank (a range
// minimum over the lifetime) gives the same order in O(n log n).
std::vector<size_t> by_breadth_order(std::span<const BufferLifetime> buffers,
                                     const std::vector<size_t>& by_size) {
  std::vector<int64_t> starts;
  for (const BufferLifetime& b : buffers) starts.push_back(b.first_step);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  const size_t n_steps = starts.size();
  // Each buffer covers the start steps [lo, hi] (indices into `starts`).
  std::vector<std::pair<size_t, size_t>> span(buffers.size());
  std::vector<size_t> live(n_steps + 1, 0);  // modular sums: every prefix is a true byte count
  for (size_t i = 0; i < buffers.size(); ++i) {
    const size_t lo = static_cast<size_t>(
        std::lower_bound(starts.begin(), starts.end(), buffers[i].first_step) - starts.begin());
    const size_t hi = static_cast<size_t>(
        std::upper_bound(starts.begin(), starts.end(), buffers[i].last_step) - starts.begin() - 1);
    span[i] = {lo, hi};
    live[lo] += buffers[i].size;
    live[hi + 1] -= buffers[i].size;
  }
  for (size_t j = 1; j < n_steps; ++j) live[j] += live[j - 1];
  std::vector<size_t> steps_by_breadth(n_steps);
  std::iota(steps_by_breadth.begin(), steps_by_breadth.end(), size_t{0});
  std::stable_sort(steps_by_breadth.begin(), steps_by_breadth.end(),
                   [&](size_t a, size_t b) { return live[a] > live[b]; });
  std::vector<size_t> rank(n_steps);
  for (size_t r = 0; r < n_steps; ++r) rank[steps_by_breadth[r]] = r;

  // Sparse table for range minima of rank: table[k][j] = min of rank[j .. j + 2^k).
  std::vector<std::vector<size_t>> table{rank};
  for (size_t k = 1; (size_t{1} << k) <= n_steps; ++k) {
    const std::vector<size_t>& prev = table.back();
    std::vector<size_t> next(n_steps - (size_t{1} << k) + 1);
    for (size_t j = 0; j < next.size(); ++j)
      next[j] = std::min(prev[j], prev[j + (size_t{1} << (k - 1))]);
    table.push_back(std::move(next));
  }
  auto range_min = [&](size_t lo, size_t hi) {
    const size_t k = static_cast<size_t>(std::bit_width(hi - lo + 1) - 1);
    return std::min(table[k][lo], table[k][hi + 1 - (size_t{1} << k)]);
  };
  std::vector<size_t> taken_at(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    taken_at[i] = range_min(span[i].first, span[i].second);
  std::vector<size_t> order = by_size;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return taken_at[a] < taken_at[b]; });
  return order;
}

void validate(std::span<const BufferLifetime> buffers) {
  size_t total = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLifetime& b = buffers[i];
    if (b.alignment == 0 || (b.alignment & (b.alignment - 1)) != 0)
      fail("memory plan: buffer {} has alignment {}, not a power of two", i, b.alignment);
    if (b.last_step < b.first_step)
      fail("memory plan: buffer {} is last used at step {}, before its first use at step {}", i,
           b.last_step, b.first_step);
    // Bound every sum the planner forms: offsets never exceed total size plus total alignment.
    const size_t need = b.size + b.alignment;
    if (need < b.size || total + need < total)
      fail("memory plan: buffer sizes overflow (buffer {} has {} bytes)", i, b.size);
    total += need;
  }
}

}  // namespace

size_t peak_live_bytes(std::span<const BufferLifetime> buffers) {
  // Sweep over (step, starts before ends): lifetimes are inclusive, so a buffer that ends at a
  // step is still alive for one that starts there.
  struct Event {
    int64_t step;
    bool is_end;
    size_t size;
  };
  std::vector<Event> events;
  events.reserve(2 * buffers.size());
  for (const BufferLifetime& b : buffers) {
    events.push_back({b.first_step, false, b.size});
    events.push_back({b.last_step, true, b.size});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.step != b.step ? a.step < b.step : a.is_end < b.is_end;
  });
  size_t live = 0, peak = 0;
  for (const Event& e : events) {
    if (e.is_end) {
      live -= e.size;
    } else {
      live += e.size;
      peak = std::max(peak, live);
    }
  }
  return peak;
}

MemoryPlan plan_memory(std::span<const BufferLifetime> buffers) {
  validate(buffers);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});

  // Order 1: largest first; ties by earlier start, then input order (deterministic).
  std::vector<size_t> by_size = order;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    if (buffers[a].size != buffers[b].size) return buffers[a].size > buffers[b].size;
    return buffers[a].first_step < buffers[b].first_step;
  });
  MemoryPlan best = place_in_order(buffers, by_size);

  MemoryPlan other = place_in_order(buffers, by_breadth_order(buffers, by_size));
  if (other.arena_size < best.arena_size) best = std::move(other);
  return best;
}

}  // namespace ugrad
