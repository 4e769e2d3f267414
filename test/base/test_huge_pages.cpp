// Host memory in huge pages (base/huge_pages.h): regions from a 2 MiB boundary, and the arena's
// buffers aligned, zero-filled, disjoint and alive as long as their owners; pages faulted in ahead.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "base/huge_pages.h"

using namespace ugrad;

TEST_CASE("huge pages: a region starts on a 2 MiB boundary and holds its bytes, zeroed") {
  const size_t bytes = (size_t{5} << 20) + 123;
  const auto r = map_huge_pages(bytes);
  REQUIRE(r.has_value());
  CHECK(reinterpret_cast<uintptr_t>(r->data) % (size_t{2} << 20) == 0);
  CHECK(r->data >= static_cast<std::byte*>(r->region));
  CHECK(r->data + bytes <= static_cast<std::byte*>(r->region) + r->region_size);
  CHECK(r->data[0] == std::byte{0});
  CHECK(r->data[bytes - 1] == std::byte{0});
  r->data[bytes - 1] = std::byte{7};
  unmap_huge_pages(*r);
}

TEST_CASE("huge pages: the arena's buffers are aligned, zeroed, disjoint and outlive the arena") {
  std::vector<std::shared_ptr<std::byte>> kept;
  std::vector<size_t> sizes;
  {
    HugePageArena arena;
    // Small ones share a chunk; one larger than a chunk gets its own; more spill into a new one.
    for (size_t size :
         {size_t{1}, size_t{100}, HugePageArena::kChunkBytes / 2, HugePageArena::kChunkBytes + 5,
          HugePageArena::kChunkBytes / 2 + 1, size_t{64}}) {
      std::shared_ptr<std::byte> p = arena.allocate(size, "a test buffer");
      CHECK(reinterpret_cast<uintptr_t>(p.get()) % HugePageArena::kAlignment == 0);
      CHECK(p.get()[0] == std::byte{0});
      CHECK(p.get()[size - 1] == std::byte{0});
      kept.push_back(p);
      sizes.push_back(size);
    }
    for (size_t i = 0; i < kept.size(); ++i)
      for (size_t j = 0; j < kept.size(); ++j) {
        const std::byte *a = kept[i].get(), *b = kept[j].get();
        if (i != j) CHECK((a + sizes[i] <= b || b + sizes[j] <= a));
      }
  }
  // The arena is gone; its chunks live on with their buffers.
  for (size_t i = 0; i < kept.size(); ++i) {
    kept[i].get()[sizes[i] - 1] = std::byte{1};
    CHECK(kept[i].get()[sizes[i] - 1] == std::byte{1});
  }
}

namespace {
// How many of the pages of [p, p + bytes) are resident (mincore).
size_t resident_pages(std::byte* p, size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  REQUIRE(::mincore(p, bytes, in_core.data()) == 0);
  size_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}
}  // namespace

TEST_CASE("prefault: the ranges' pages become resident, their bytes unchanged, the rest not") {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t pages = 64;
  void* m =
      ::mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  auto* p = static_cast<std::byte*>(m);
  ::madvise(p, pages * page, MADV_NOHUGEPAGE);  // page by page, as the counts below assume
  p[5] = std::byte{42};                         // written before: must survive
  CHECK(resident_pages(p, pages * page) == 1);
  // Two ranges, the first from inside a page: [5, 10 pages + 1) and [40 pages, 48 pages).
  auto owner = std::make_shared<int>(0);
  prefault_async({{p + 5, 10 * page - 4}, {p + 40 * page, 8 * page}}, owner).get();
  CHECK(owner.use_count() == 1);  // the thread let go of it
#ifdef MADV_POPULATE_WRITE
  CHECK(resident_pages(p, 11 * page) == 11);
  CHECK(resident_pages(p + 11 * page, 29 * page) == 0);
  CHECK(resident_pages(p + 40 * page, 8 * page) == 8);
  CHECK(resident_pages(p + 48 * page, 16 * page) == 0);
#endif
  CHECK(p[5] == std::byte{42});
  CHECK(p[page] == std::byte{0});
  ::munmap(m, pages * page);
}
