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

/// Read bandwidth (GB/s) of `threads` threads summing slices of a buffer larger than the caches,
/// best of 3: the roofline of a memory-bound kernel run on as many threads.
inline double read_bandwidth(int threads) {
  std::vector<uint64_t> v(size_t{256} << 20 >> 3, 1);
  const size_t slice = v.size() / threads;
  std::vector<uint64_t> sums(threads, 0);
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    auto t0 = clock_type::now();
    std::vector<std::thread> workers;
    for (int i = 1; i < threads; ++i)
      workers.emplace_back([&, i] {
        sums[i] += std::accumulate(v.begin() + i * slice, v.begin() + (i + 1) * slice, 0ull);
      });
    sums[0] += std::accumulate(v.begin(), v.begin() + slice, 0ull);
    for (std::thread& t : workers) t.join();
    best = std::max(best, static_cast<double>(slice * threads * 8) / seconds(t0) * 1e-9);
  }
  if (std::accumulate(sums.begin(), sums.end(), 0ull) == 42) std::puts("");
  return best;
}

}  // namespace ugrad::bench
