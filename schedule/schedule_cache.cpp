#include <mutex>
#include <unordered_map>

#include "schedule/kernelize.h"
#include "schedule/schedule.h"

namespace ugrad {

namespace {

// A schedule depends on the graph's structure, not on which buffers it reads: graphs are keyed
// with their buffers renamed in order of appearance, and a cached schedule is instantiated with
// the caller's buffers and fresh ones for everything it allocates.
struct ScheduleCache {
  std::mutex mutex;
  std::unordered_map<UOp, Schedule> entries;
  static constexpr size_t kMaxEntries = 4096;
};

ScheduleCache& schedule_cache() {
  static ScheduleCache* cache = new ScheduleCache();
  return *cache;
}

}  // namespace

Schedule create_schedule(const std::vector<UOp>& roots) {
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  std::vector<std::pair<UOp, UOp>> to_canonical, from_canonical;
  for (const UOp& u : sink.toposort()) {
    if (u.op() != Op::BUFFER) continue;
    const BufferArg& a = u.arg_as<BufferArg>();
    int64_t id = -static_cast<int64_t>(to_canonical.size()) - 1;
    UOp c = UOp::make(Op::BUFFER, u.dtype(), {}, BufferArg{id, a.size, a.device});
    to_canonical.emplace_back(u, c);
    from_canonical.emplace_back(c, u);
  }
  UOp key = sink.substitute(to_canonical);
  ScheduleCache& cache = schedule_cache();
  Schedule canonical;
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) canonical = it->second;
  }
  if (canonical.outputs.empty() && !roots.empty()) {
    canonical = build_schedule(key.src());
    std::lock_guard lock(cache.mutex);
    if (cache.entries.size() >= ScheduleCache::kMaxEntries) cache.entries.clear();
    cache.entries.emplace(key, canonical);
  }
  // Instantiate: the caller's buffers for the renamed ones, fresh buffers for the rest.
  std::unordered_map<UOp, UOp> mapping(from_canonical.begin(), from_canonical.end());
  auto map_buffer = [&](const UOp& b) {
    auto it = mapping.find(b);
    if (it != mapping.end()) return it->second;
    const BufferArg& a = b.arg_as<BufferArg>();
    UOp fresh = buffer_node(a.device, b.dtype(), a.size);
    mapping.emplace(b, fresh);
    return fresh;
  };
  Schedule out;
  for (const ScheduleItem& item : canonical.items) {
    ScheduleItem inst{item.ast, {}};
    for (const UOp& b : item.buffers) inst.buffers.push_back(map_buffer(b));
    out.items.push_back(std::move(inst));
  }
  for (const UOp& o : canonical.outputs) {
    std::vector<std::pair<UOp, UOp>> subs;
    for (const UOp& x : o.toposort())
      if (x.op() == Op::BUFFER) subs.emplace_back(x, map_buffer(x));
    out.outputs.push_back(o.substitute(subs));
  }
  return out;
}

}  // namespace ugrad
