#include "schedule/memory_plan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include "uop/error.h"

namespace ugrad {
namespace {

constexpr size_t kNoOffset = std::numeric_limits<size_t>::max();

size_t align_up(size_t x, size_t alignment) { return (x + alignment - 1) / alignment * alignment; }

struct Placed {
  size_t offset;
  size_t end;
};

// Greedy placement in the given order: the tightest gap among time-overlapping placed buffers.
MemoryPlan place_in_order(std::span<const BufferLifetime> buffers,
                          const std::vector<size_t>& order) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), kNoOffset);
  std::vector<size_t> placed;  // indices, in placement order
  std::vector<Placed> live;
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    plan.alignment = std::max(plan.alignment, b.alignment);
    if (b.size == 0) {  // occupies nothing: any aligned offset is fine
      plan.offsets[i] = 0;
      continue;
    }
    live.clear();
    for (size_t j : placed)
      if (lifetimes_overlap(b, buffers[j]))
        live.push_back({plan.offsets[j], plan.offsets[j] + buffers[j].size});
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
    placed.push_back(i);
  }
  return plan;
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
  std::map<int64_t, int64_t> delta;  // step -> change in live bytes at the start of that step
  for (const BufferLifetime& b : buffers) {
    delta[b.first_step] += static_cast<int64_t>(b.size);
    delta[b.last_step + 1] -= static_cast<int64_t>(b.size);
  }
  int64_t live = 0, peak = 0;
  for (const auto& [step, d] : delta) peak = std::max(peak, live += d);
  return static_cast<size_t>(peak);
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

  // Order 2, "greedy by breadth": visit the steps where some buffer starts, busiest first, and at
  // each take its not yet ordered buffers largest first.
  std::vector<std::pair<int64_t, int64_t>> steps;  // (live bytes, step)
  for (const BufferLifetime& s : buffers) steps.push_back({0, s.first_step});
  std::sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.second < b.second; });
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  for (auto& [live, step] : steps)
    for (const BufferLifetime& b : buffers)
      if (b.first_step <= step && step <= b.last_step) live += static_cast<int64_t>(b.size);
  std::stable_sort(steps.begin(), steps.end(), [](auto& a, auto& b) { return a.first > b.first; });
  std::vector<size_t> by_breadth;
  std::vector<bool> taken(buffers.size(), false);
  for (const auto& [live, step] : steps)
    for (size_t i : by_size)
      if (!taken[i] && buffers[i].first_step <= step && step <= buffers[i].last_step) {
        taken[i] = true;
        by_breadth.push_back(i);
      }
  MemoryPlan other = place_in_order(buffers, by_breadth);
  if (other.arena_size < best.arena_size) best = std::move(other);
  return best;
}

}  // namespace ugrad
