// Memory planning: place the intermediate buffers of a linear schedule in one arena so that buffers
// alive at the same time never overlap, keeping the arena small.
//
// Heuristic: "greedy by size" (as in TFLite's arena planner): take buffers largest first and put
// each into the tightest gap, among the buffers already placed that it overlaps in time, that fits
// it; else above them all. Two orders are tried (by size, and by size at the busiest step first)
// and the smaller arena wins.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ugrad {

/// One buffer to place: bytes, required alignment of its offset (a power of two) and the first and
/// last step (inclusive) of the schedule that use it.
struct BufferLifetime {
  size_t size = 0;
  size_t alignment = 1;
  int64_t first_step = 0;
  int64_t last_step = 0;
};

/// Byte offsets into the arena, one per buffer in input order, and the arena's size. The arena's
/// base must be aligned to `alignment` (the largest buffer alignment).
struct MemoryPlan {
  std::vector<size_t> offsets;
  size_t arena_size = 0;
  size_t alignment = 1;
};

/// Whether two lifetimes share at least one step.
inline bool lifetimes_overlap(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

/// Places every buffer; an Error for a non-power-of-two alignment, a lifetime that ends before it
/// starts, or sizes whose sum overflows.
MemoryPlan plan_memory(std::span<const BufferLifetime> buffers);

/// The most bytes alive at any one step: no plan's arena can be smaller.
size_t peak_live_bytes(std::span<const BufferLifetime> buffers);

}  // namespace ugrad
