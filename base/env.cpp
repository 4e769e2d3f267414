#include "base/env.h"

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>

#include "base/error.h"

namespace ugrad {
namespace {

constexpr KnobInfo kKnobs[] = {
#define UGRAD_KNOB_INFO(name, def, doc) {Knob::name, #name, def, doc},
    UGRAD_FOR_EACH_KNOB(UGRAD_KNOB_INFO)
#undef UGRAD_KNOB_INFO
};

std::mutex g_override_mutex;
std::map<Knob, std::string> g_overrides;
std::atomic<int> g_debug_cache{-1};  // -1: not read yet

}  // namespace

std::span<const KnobInfo> all_knobs() { return kKnobs; }

std::string knob_str(Knob k) {
  {
    std::lock_guard lock(g_override_mutex);
    if (auto it = g_overrides.find(k); it != g_overrides.end()) return it->second;
  }
  const KnobInfo& info = kKnobs[static_cast<int>(k)];
  if (const char* v = std::getenv(info.name)) return v;
  return info.default_value;
}

int64_t knob_int(Knob k) {
  std::string s = knob_str(k);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    fail("environment knob {}={:?} is not an integer", kKnobs[static_cast<int>(k)].name, s);
  return value;
}

int debug_level() {
  int v = g_debug_cache.load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(knob_int(Knob::DEBUG));
    g_debug_cache.store(v, std::memory_order_relaxed);
  }
  return v;
}

ScopedKnob::ScopedKnob(Knob k, std::string value) : knob_(k) {
  std::lock_guard lock(g_override_mutex);
  auto it = g_overrides.find(k);
  had_previous_ = it != g_overrides.end();
  if (had_previous_) previous_ = it->second;
  g_overrides[k] = std::move(value);
  g_debug_cache.store(-1);
}

ScopedKnob::~ScopedKnob() {
  std::lock_guard lock(g_override_mutex);
  if (had_previous_)
    g_overrides[knob_] = previous_;
  else
    g_overrides.erase(knob_);
  g_debug_cache.store(-1);
}

}  // namespace ugrad
