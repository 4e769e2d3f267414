#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "runtime/thread_pool.h"

using namespace ugrad;

// Counts every allocation in this test program, to show that a dispatch makes none.
namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace {

// Runs parallel_for and checks the chunks exactly tile [0, n) with sizes differing by at most one.
void check_tiling(ThreadPool& pool, int64_t n, int64_t max_chunks, int64_t want_chunks) {
  std::vector<std::pair<int64_t, int64_t>> chunks(static_cast<size_t>(want_chunks + 1), {-1, -1});
  std::atomic<int64_t> calls{0};
  pool.parallel_for(
      n,
      [&](int64_t begin, int64_t end) {
        const int64_t slot = calls.fetch_add(1);
        if (slot < static_cast<int64_t>(chunks.size()))
          chunks[static_cast<size_t>(slot)] = {begin, end};
      },
      max_chunks);
  REQUIRE(calls.load() == want_chunks);
  chunks.resize(static_cast<size_t>(want_chunks));
  std::sort(chunks.begin(), chunks.end());
  int64_t expect_begin = 0, smallest = INT64_MAX, largest = 0;
  for (auto [b, e] : chunks) {
    CHECK(b == expect_begin);
    CHECK(e > b);
    smallest = std::min(smallest, e - b);
    largest = std::max(largest, e - b);
    expect_begin = e;
  }
  CHECK(expect_begin == n);
  if (want_chunks > 0) CHECK(largest - smallest <= 1);
}

}  // namespace

TEST_SUITE("thread_pool") {
  TEST_CASE("chunk_bounds tiles any range, up to INT64_MAX") {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000003}, INT64_MAX}) {
      for (int64_t parts : {1, 2, 3, 8, 64}) {
        int64_t expect = 0;
        for (int64_t i = 0; i < parts; ++i) {
          auto [b, e] = chunk_bounds(n, parts, i);
          CHECK(b == expect);
          CHECK(e >= b);
          CHECK(e - b - n / parts <= 1);
          expect = e;
        }
        CHECK(expect == n);
      }
    }
  }

  TEST_CASE("parallel_for chunking: n = 0, n < workers, n = workers, large n") {
    ThreadPool pool(4);
    CHECK(pool.num_threads() == 4);
    check_tiling(pool, 0, 0, 0);
    check_tiling(pool, 1, 0, 1);
    check_tiling(pool, 3, 0, 3);
    check_tiling(pool, 4, 0, 4);
    check_tiling(pool, 5, 0, 4);
    check_tiling(pool, 1000001, 0, 4);
    check_tiling(pool, 1000001, 2, 2);  // max_chunks caps the split
    check_tiling(pool, 10, 100, 4);     // and never raises it above the participants
    check_tiling(pool, INT64_MAX, 0, 4);
  }

  TEST_CASE("parallel_for computes a sum correctly with every pool size") {
    for (int threads : {1, 2, 3, 8}) {
      ThreadPool pool(threads);
      std::vector<int64_t> data(100003);
      std::iota(data.begin(), data.end(), 0);
      std::atomic<int64_t> total{0};
      pool.parallel_for(static_cast<int64_t>(data.size()), [&](int64_t b, int64_t e) {
        int64_t s = 0;
        for (int64_t i = b; i < e; ++i) s += data[static_cast<size_t>(i)];
        total += s;
      });
      CHECK(total.load() == int64_t{100003} * 100002 / 2);
    }
  }

  TEST_CASE("work really runs on several threads") {
    ThreadPool pool(4);
    std::mutex m;
    std::set<std::thread::id> ids;
    // Each chunk waits until all four have started, which only works if they run concurrently.
    std::atomic<int> started{0};
    pool.parallel_for(4, [&](int64_t, int64_t) {
      started++;
      while (started.load() < 4) std::this_thread::yield();
      std::lock_guard lock(m);
      ids.insert(std::this_thread::get_id());
    });
    CHECK(ids.size() == 4);
    CHECK(ids.count(std::this_thread::get_id()) == 1);  // the caller does a share
  }

  TEST_CASE("raw kernel form: every core id once, with the args") {
    ThreadPool pool(3);
    std::atomic<int64_t> seen[8] = {};
    int64_t n_cores_seen = -1;
    void* args[2] = {seen, &n_cores_seen};
    auto kernel = [](void** a, int64_t core, int64_t n) {
      static_cast<std::atomic<int64_t>*>(a[0])[core] += 1;
      if (core == 0) *static_cast<int64_t*>(a[1]) = n;
    };
    pool.run(kernel, args);
    CHECK(n_cores_seen == 3);
    for (int i = 0; i < 3; ++i) CHECK(seen[i].load() == 1);
    // More cores than participants: each participant takes several.
    pool.run(kernel, args, 8);
    CHECK(n_cores_seen == 8);
    for (int i = 0; i < 8; ++i) CHECK(seen[i].load() == (i < 3 ? 2 : 1));
    CHECK_THROWS_AS(pool.run(kernel, args, -1), Error);
  }

  TEST_CASE("an exception in a worker or the caller reaches the caller, and the pool still works") {
    ThreadPool pool(4);
    for (int64_t thrower : {0, 1, 3}) {
      CHECK_THROWS_WITH_AS(pool.parallel_for(4,
                                             [&](int64_t b, int64_t) {
                                               if (b == thrower) throw Error("chunk failed");
                                             }),
                           "chunk failed", Error);
    }
    // Every chunk throws: exactly one exception comes out.
    CHECK_THROWS_AS(pool.parallel_for(100, [](int64_t, int64_t) { throw std::runtime_error("x"); }),
                    std::runtime_error);
    std::atomic<int64_t> count{0};
    pool.parallel_for(1000, [&](int64_t b, int64_t e) { count += e - b; });
    CHECK(count.load() == 1000);
  }

  TEST_CASE("nested dispatch runs serially instead of deadlocking") {
    ThreadPool pool(4);
    std::atomic<int64_t> inner{0};
    pool.parallel_for(4, [&](int64_t, int64_t) {
      CHECK(ThreadPool::in_task());
      pool.parallel_for(10, [&](int64_t b, int64_t e) { inner += e - b; });
      void* args[1] = {&inner};
      pool.run([](void** a, int64_t, int64_t) { ++*static_cast<std::atomic<int64_t>*>(a[0]); },
               args, 2);
    });
    CHECK(inner.load() == 4 * (10 + 2));
    CHECK_FALSE(ThreadPool::in_task());
  }

  TEST_CASE("concurrent callers from several threads each get their full result") {
    ThreadPool pool(3);
    std::vector<std::thread> callers;
    std::atomic<int64_t> total{0};
    for (int t = 0; t < 4; ++t)
      callers.emplace_back([&] {
        for (int rep = 0; rep < 200; ++rep)
          pool.parallel_for(97, [&](int64_t b, int64_t e) { total += e - b; });
      });
    for (auto& c : callers) c.join();
    CHECK(total.load() == 4 * 200 * 97);
  }

  TEST_CASE("many rapid dispatches, including ones that let the workers fall asleep") {
    ThreadPool pool(4);
    std::atomic<int64_t> count{0};
    for (int rep = 0; rep < 5000; ++rep)
      pool.parallel_for(4, [&](int64_t b, int64_t e) { count += e - b; });
    CHECK(count.load() == 5000 * 4);
    for (int rep = 0; rep < 5; ++rep) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin: workers sleep
      pool.parallel_for(4, [&](int64_t b, int64_t e) { count += e - b; });
    }
    CHECK(count.load() == 5000 * 4 + 5 * 4);
  }

  TEST_CASE("a dispatch allocates nothing") {
    ThreadPool pool(3);
    std::atomic<int64_t> count{0};
    int64_t big_capture[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // too big for std::function's inline buffer
    auto body = [&, big_capture](int64_t b, int64_t e) { count += (e - b) * big_capture[0]; };
    void* args[1] = {&count};
    auto kernel = [](void** a, int64_t, int64_t) { ++*static_cast<std::atomic<int64_t>*>(a[0]); };
    pool.parallel_for(3, body);  // warm up
    const int64_t before = g_allocations.load();
    for (int rep = 0; rep < 1000; ++rep) {
      pool.parallel_for(1000, body);
      pool.run(kernel, args);
    }
    CHECK(g_allocations.load() == before);
    CHECK(count.load() == 3 + 1000 * (1000 + 3));
    auto counted = std::make_unique<int64_t>(0);  // the counter itself works
    CHECK(g_allocations.load() == before + 1);
  }

  TEST_CASE("a slow task makes the caller sleep, and the last worker wakes it") {
    ThreadPool pool(2);
    std::atomic<int> done{0};
    pool.parallel_for(2, [&](int64_t b, int64_t) {
      if (b == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++done;
    });
    CHECK(done.load() == 2);
  }

  TEST_CASE("thread counts: 0 means one per core, out of range is an Error") {
    ThreadPool pool(0);
    CHECK(pool.num_threads() >= 1);
    CHECK_THROWS_AS(ThreadPool(-1), Error);
    CHECK_THROWS_AS(ThreadPool(ThreadPool::kMaxThreads + 1), Error);
  }

  TEST_CASE("the process-wide pool follows THREADS when re-created") {
    {
      ScopedKnob threads(Knob::THREADS, "1");
      ThreadPool::reset_instance();
      CHECK(ThreadPool::instance().num_threads() == 1);
      std::set<std::thread::id> ids;
      ThreadPool::instance().parallel_for(8, [&](int64_t, int64_t) {
        ids.insert(std::this_thread::get_id());  // serial: no lock needed
      });
      CHECK(ids.size() == 1);
    }
    {
      ScopedKnob threads(Knob::THREADS, "3");
      ThreadPool::reset_instance();
      CHECK(ThreadPool::instance().num_threads() == 3);
    }
    {
      ScopedKnob threads(Knob::THREADS, "-2");
      CHECK_THROWS_AS(ThreadPool::reset_instance(), Error);
    }
    ThreadPool::reset_instance();
    CHECK(ThreadPool::instance().num_threads() >= 1);
  }

  TEST_CASE("pools are created and destroyed cleanly, busy or idle") {
    for (int rep = 0; rep < 50; ++rep) {
      ThreadPool pool(3);
      if (rep % 2 == 0) pool.parallel_for(3, [](int64_t, int64_t) {});
    }
  }
}
