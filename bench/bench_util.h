// Baselines the benchmarks share: wall time and the machine's read bandwidth.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <thread>
#include <vector>

namespace ugrad::bench {

using clock_type = std::chrono::steady_clock;

inline double seconds(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Seconds per call of `f`: the best of `rounds` rounds, each calling it for at least
/// `min_seconds`.
template <typename F>
double best_call_seconds(F&& f, double min_seconds = 0.05, int rounds = 3) {
  double best = 1e30;
  for (int round = 0; round < rounds; ++round) {
    int calls = 0;
    const auto t0 = clock_type::now();
    do {
      f();
      ++calls;
    } while (seconds(t0) < min_seconds);
    best = std::min(best, seconds(t0) / calls);
  }
  return best;
}

/// One thread's sum of words [0, n): eight independent sums, which the compiler vectorizes for
/// the widest registers the CPU has (a scalar or SSE2 loop tops out below the memory's speed:
/// std::accumulate built for baseline x86-64 read 14-19 GB/s where AVX-512 sums read 21-29);
/// `prefetch` adds a software prefetch 2 KiB ahead (some streams outrun this VM's hardware
/// prefetchers).
__attribute__((target_clones("avx512f", "avx2", "default"))) static uint64_t sum_words(
    const uint64_t* p, size_t n, bool prefetch) {
  uint64_t s[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    if (prefetch) __builtin_prefetch(p + i + 256, 0, 3);
    for (int j = 0; j < 8; ++j) s[j] += p[i + j];
  }
  return std::accumulate(s, s + 8, uint64_t{0});
}

/// Read bandwidth (GB/s) of `threads` threads summing slices of a 512 MiB buffer (twice this
/// machine's last-level cache), the best of 3 rounds each with and without software prefetch:
/// the roofline of a memory-bound kernel run on as many threads.
inline double read_bandwidth(int threads) {
  std::vector<uint64_t> v(size_t{512} << 20 >> 3, 1);
  const size_t slice = v.size() / threads;
  std::vector<uint64_t> sums(threads, 0);
  double best = 0;
  for (int r = 0; r < 6; ++r) {
    const bool prefetch = r % 2 == 1;
    auto t0 = clock_type::now();
    std::vector<std::thread> workers;
    for (int i = 1; i < threads; ++i)
      workers.emplace_back([&, i] { sums[i] += sum_words(&v[i * slice], slice, prefetch); });
    sums[0] += sum_words(v.data(), slice, prefetch);
    for (std::thread& t : workers) t.join();
    best = std::max(best, static_cast<double>(slice * threads * 8) / seconds(t0) * 1e-9);
  }
  if (std::accumulate(sums.begin(), sums.end(), 0ull) == 42) std::puts("");
  return best;
}

}  // namespace ugrad::bench
