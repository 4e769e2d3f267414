#include "test/mockgpu/cache.h"

#include <algorithm>
#include <map>

namespace ugrad::mockgpu {

std::vector<Footprint> footprints(const LineSet& lines, const MemoryMap& memory) {
  std::map<uint64_t, Footprint> by_base;
  lines.for_each([&](uint64_t line, uint8_t access) {
    const auto [base, end] = memory.range_of(line * kLineBytes);
    if (base == end) return;  // cannot happen: every access was checked against the map
    Footprint& f = by_base[base];
    f.base = base;
    f.size = end - base;
    f.read_lines += (access & LineSet::kRead) != 0;
    f.written_lines += (access & LineSet::kWritten) != 0;
    ++f.lines;
  });
  std::vector<Footprint> out;
  for (const auto& [base, f] : by_base) out.push_back(f);
  return out;
}

void SharedCaches::account(const std::vector<Footprint>& touched, double scale, LaunchCounters& c) {
  const auto bytes = [&](const Footprint& f, uint64_t lines) {
    const double whole = static_cast<double>((f.size + kLineBytes - 1) / kLineBytes * kLineBytes);
    return std::min(whole, static_cast<double>(lines * kLineBytes) * scale);
  };
  c.cache_accounted = true;
  for (const Footprint& f : touched) {
    double before = 0, resident = 0;  // bytes touched more recently; this buffer's own
    for (const Entry& e : recent_) {
      if (e.base == f.base) {
        resident = e.bytes;
        break;
      }
      before += e.bytes;
    }
    // A buffer stays in a cache whole or not at all: a scan larger than what is left evicts its
    // own lines before it comes back to them (LRU), so it finds none.
    const auto in_cache = [&](uint64_t capacity) {
      return before + resident <= static_cast<double>(capacity) ? resident : 0.0;
    };
    const double read = bytes(f, f.read_lines);
    const double l2 = std::min(read, in_cache(kL2Bytes));
    const double infinity = std::min(read, in_cache(kInfinityCacheBytes)) - l2;
    c.read_bytes_l2 += l2;
    c.read_bytes_infinity += infinity;
    c.read_bytes_dram += read - l2 - infinity;
    c.written_bytes += bytes(f, f.written_lines);
  }
  for (const Footprint& f : touched) {
    forget(f.base);
    recent_.insert(recent_.begin(), Entry{f.base, bytes(f, f.lines)});
  }
  double total = 0;  // what lies beyond the Infinity Cache is gone
  auto keep = std::find_if(recent_.begin(), recent_.end(), [&](const Entry& e) {
    total += e.bytes;
    return total - e.bytes >= static_cast<double>(kInfinityCacheBytes);
  });
  recent_.erase(keep, recent_.end());
}

void SharedCaches::forget(uint64_t base) {
  std::erase_if(recent_, [&](const Entry& e) { return e.base == base; });
}

}  // namespace ugrad::mockgpu
