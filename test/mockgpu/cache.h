// The caches every CU shares (the 6 MB L2 and the 96 MB Infinity Cache), modeled across launches
// for the cost model: which of a launch's bytes were still cached from the launches before it.
// Granularity is the allocation: a launch's footprint in a buffer is its distinct 128-byte lines
// there, and the buffers form one LRU stack by bytes: a buffer is resident in a cache when the
// bytes other buffers touched since its own last touch leave room for all of it. Streamed
// weights miss; activations, a KV cache or a recurrent state re-read soon after hit.
#pragma once
#include <cstdint>
#include <vector>

#include "test/mockgpu/emu.h"

namespace ugrad::mockgpu {

/// A launch's lines in one allocation.
struct Footprint {
  uint64_t base = 0, size = 0;
  uint64_t read_lines = 0, written_lines = 0, lines = 0;  // lines = read or written
};

/// The launch's lines grouped by the live allocation that holds them.
std::vector<Footprint> footprints(const LineSet& lines, const MemoryMap& memory);

class SharedCaches {
 public:
  /// Fills c's read_bytes_l2/_infinity/_dram and written_bytes from the launch's footprints (the
  /// emulated workgroups' lines times `scale`, at most each allocation's size), then makes the
  /// touched bytes the most recent.
  void account(const std::vector<Footprint>& touched, double scale, LaunchCounters& c);
  /// Forgets a freed allocation (a new one at its address starts cold).
  void forget(uint64_t base);
  /// Forgets everything: the next launch finds the caches cold.
  void clear() { recent_.clear(); }

 private:
  struct Entry {
    uint64_t base;
    double bytes;
  };
  std::vector<Entry> recent_;  // most recent first, at most the Infinity Cache's bytes in all
};

}  // namespace ugrad::mockgpu
