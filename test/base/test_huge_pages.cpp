// Host memory in huge pages (base/huge_pages.h): regions from a 2 MiB boundary, and the arena's
// buffers aligned, zero-filled, disjoint and alive as long as their owners.
#include <doctest/doctest.h>

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
