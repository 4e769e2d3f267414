#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "runtime/allocator.h"

using namespace ugrad;

namespace {

// Host memory that counts its calls and can be told to run out.
class CountingAllocator final : public Allocator {
 public:
  void* alloc(size_t bytes) override {
    if (fail_next > 0 || bytes > capacity - in_use) {
      if (fail_next > 0) --fail_next;
      throw OutOfMemory("counting: out of memory");
    }
    ++allocs;
    in_use += bytes;
    void* p = inner.alloc(bytes);
    live[p] = bytes;
    return p;
  }
  void free(void* handle, size_t bytes) override {
    ++frees;
    CHECK(live.count(handle) == 1);
    CHECK(live[handle] == bytes);
    live.erase(handle);
    in_use -= bytes;
    inner.free(handle, bytes);
  }
  void copy_in(void* dst, const void* src, size_t bytes) override {
    inner.copy_in(dst, src, bytes);
  }
  void copy_out(void* dst, const void* src, size_t bytes) override {
    inner.copy_out(dst, src, bytes);
  }
  void* as_host_ptr(void* handle) override { return handle; }

  CpuAllocator inner;
  std::map<void*, size_t> live;
  size_t capacity = SIZE_MAX, in_use = 0;
  int allocs = 0, frees = 0, fail_next = 0;
};

std::vector<std::byte> pattern(size_t n, int seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
  return v;
}

}  // namespace

TEST_SUITE("allocator") {
  TEST_CASE("cpu: aligned, distinct, zero-size handled, round trips") {
    CpuAllocator cpu;
    std::set<void*> seen;
    for (size_t bytes : {size_t{0}, size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}}) {
      void* p = cpu.alloc(bytes);
      REQUIRE(p != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(p) % CpuAllocator::kAlignment == 0);
      CHECK(seen.insert(p).second);
      auto in = pattern(bytes, 7);
      std::vector<std::byte> out(bytes);
      cpu.copy_in(p, in.data(), bytes);
      cpu.copy_out(out.data(), p, bytes);
      CHECK(in == out);
      CHECK(cpu.as_host_ptr(p) == p);
    }
    for (void* p : seen) cpu.free(p, 0);
  }

  TEST_CASE("cpu: absurd sizes are an Error naming the size") {
    CpuAllocator cpu;
    CHECK_THROWS_WITH_AS(cpu.alloc(SIZE_MAX), doctest::Contains("18446744073709551615 bytes"),
                         Error);
    CHECK_THROWS_AS(cpu.alloc(SIZE_MAX - 10), Error);
    CHECK_THROWS_AS(cpu.alloc(size_t{1} << 62), Error);
  }

  TEST_CASE("lru: freed buffers are reused by size, most recent first") {
    auto counting = std::make_shared<CountingAllocator>();
    LruAllocator lru(counting, 1 << 20);
    void* a = lru.alloc(1024);
    void* b = lru.alloc(1024);
    void* c = lru.alloc(2048);
    CHECK(lru.misses() == 3);
    lru.free(a, 1024);
    lru.free(b, 1024);
    lru.free(c, 2048);
    CHECK(lru.cached_bytes() == 4096);
    CHECK(lru.alloc(1024) == b);
    CHECK(lru.alloc(1024) == a);
    CHECK(lru.alloc(2048) == c);
    CHECK(lru.hits() == 3);
    CHECK(counting->allocs == 3);
    CHECK(lru.cached_bytes() == 0);
    void* d = lru.alloc(512);  // no cached 512: a new one
    CHECK(counting->allocs == 4);
    for (auto [p, n] : {std::pair{a, 1024}, {b, 1024}, {c, 2048}, {d, 512}})
      lru.free(p, static_cast<size_t>(n));
    lru.free_cache();
    CHECK(lru.cached_bytes() == 0);
    CHECK(counting->live.empty());
  }

  TEST_CASE("lru: the cache stays under its bound, evicting the least recently freed") {
    auto counting = std::make_shared<CountingAllocator>();
    LruAllocator lru(counting, 3000);
    void* p[4];
    for (auto& q : p) q = lru.alloc(1000);
    for (auto& q : p) lru.free(q, 1000);  // the fourth evicts p[0]
    CHECK(lru.cached_bytes() == 3000);
    CHECK(counting->live.count(p[0]) == 0);
    CHECK(counting->live.count(p[3]) == 1);
    void* big = lru.alloc(5000);  // larger than the bound: never cached
    lru.free(big, 5000);
    CHECK(counting->live.count(big) == 0);
    CHECK(lru.cached_bytes() == 3000);
  }

  TEST_CASE("lru: out of memory frees the cache and retries") {
    auto counting = std::make_shared<CountingAllocator>();
    counting->capacity = 4000;
    LruAllocator lru(counting, 1 << 20);
    void* a = lru.alloc(3000);
    lru.free(a, 3000);  // cached, still counted as in use by the inner allocator
    void* b = lru.alloc(2000);
    CHECK(lru.cached_bytes() == 0);
    CHECK(counting->live.size() == 1);
    counting->fail_next = 2;  // fails even after the retry: the error reaches the caller
    CHECK_THROWS_AS(lru.alloc(100), OutOfMemory);
    lru.free(b, 2000);
  }

  TEST_CASE("lru: destruction returns every cached buffer") {
    auto counting = std::make_shared<CountingAllocator>();
    {
      LruAllocator lru(counting, 1 << 20);
      for (int i = 0; i < 5; ++i) lru.free(lru.alloc(100 * (i + 1)), 100 * (i + 1));
    }
    CHECK(counting->live.empty());
    CHECK_THROWS_AS(LruAllocator(nullptr, 10), Error);
  }

  TEST_CASE("buffer: lazy allocation, copy round trip, freed on last reference") {
    auto counting = std::make_shared<CountingAllocator>();
    {
      BufferRef buf = Buffer::make("CPU", 256, counting);
      CHECK(buf->device() == "CPU");
      CHECK(buf->size() == 256);
      CHECK_FALSE(buf->is_allocated());
      CHECK(counting->allocs == 0);
      auto in = pattern(256, 3);
      buf->copy_in(in);
      CHECK(buf->is_allocated());
      std::vector<std::byte> out(256);
      buf->copy_out(out);
      CHECK(in == out);
      CHECK(std::memcmp(buf->as_host_ptr(), in.data(), 256) == 0);
      CHECK_THROWS_WITH_AS(buf->copy_in(std::span(in).first(10)),
                           doctest::Contains("copy_in of 10 bytes into a buffer of 256 bytes"),
                           Error);
      CHECK_THROWS_AS(buf->copy_out(std::span(out).first(255)), Error);
      BufferRef second = buf;
      buf.reset();
      CHECK(counting->live.size() == 1);  // still referenced
    }
    CHECK(counting->live.empty());
    CHECK(counting->allocs == 1);
    CHECK_THROWS_AS(Buffer::make("CPU", 8, nullptr), Error);
  }

  TEST_CASE("buffer: views share the base's memory and keep it alive") {
    auto counting = std::make_shared<CountingAllocator>();
    BufferRef base = Buffer::make("CPU", 1024, counting);
    BufferRef a = Buffer::view(base, 128, 256);
    BufferRef b = Buffer::view(a, 64, 64);  // a view of a view resolves to the root
    CHECK(b->base() == base);
    CHECK(b->offset() == 192);
    CHECK_FALSE(base->is_allocated());
    b->ensure_allocated();  // allocates the root
    CHECK(base->is_allocated());
    CHECK(a->is_allocated());
    auto in = pattern(64, 9);
    b->copy_in(in);
    CHECK(std::memcmp(static_cast<std::byte*>(base->as_host_ptr()) + 192, in.data(), 64) == 0);
    CHECK(static_cast<std::byte*>(a->handle()) + 64 == b->handle());
    CHECK(Buffer::view(base, 1024, 0)->size() == 0);  // an empty view at the end is fine
    CHECK_THROWS_WITH_AS(Buffer::view(base, 1000, 100), doctest::Contains("outside the 1024 bytes"),
                         Error);
    CHECK_THROWS_AS(Buffer::view(a, 200, SIZE_MAX), Error);
    base.reset();
    a.reset();
    CHECK(counting->live.size() == 1);  // b keeps the root alive
    b.reset();
    CHECK(counting->live.empty());
  }

  TEST_CASE("buffer: zero-size buffers allocate and copy nothing harmful") {
    auto cpu = std::make_shared<CpuAllocator>();
    BufferRef empty = Buffer::make("CPU", 0, cpu);
    empty->copy_in({});
    std::vector<std::byte> none;
    empty->copy_out(none);
    CHECK(empty->is_allocated());
  }
}
