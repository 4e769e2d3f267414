#include "base/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.h"

namespace ugrad {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

std::optional<HugePageRegion> map_huge_pages(size_t bytes) {
  // One huge page more than the rounded size: the aligned part starts at the first boundary.
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
  void* region = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return std::nullopt;
  auto* data = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(region) + kHugePage - 1) /
                                            kHugePage * kHugePage);
  ::madvise(data, size - kHugePage, MADV_HUGEPAGE);
  return HugePageRegion{region, size, data};
}

void unmap_huge_pages(const HugePageRegion& r) { ::munmap(r.region, r.region_size); }

std::future<void> prefault_async(std::vector<std::span<std::byte>> ranges,
                                 std::shared_ptr<const void> owner) {
  return std::async(std::launch::async, [ranges = std::move(ranges), owner = std::move(owner)] {
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (const std::span<std::byte> r : ranges) {
      if (r.empty()) continue;
      const uintptr_t begin = reinterpret_cast<uintptr_t>(r.data()) / page * page,
                      end = reinterpret_cast<uintptr_t>(r.data() + r.size());
#ifdef MADV_POPULATE_WRITE
      ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#endif
      // One byte of each page that lies in the range (the first page from r.data()).
      for (uintptr_t p = begin; p < end; p += page) {
        auto* byte =
            reinterpret_cast<unsigned char*>(std::max(p, reinterpret_cast<uintptr_t>(r.data())));
        std::atomic_ref<unsigned char>(*byte).fetch_or(0, std::memory_order_relaxed);
      }
    }
  });
}

std::shared_ptr<std::byte> HugePageArena::allocate(size_t bytes, std::string_view what) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  std::lock_guard lock(mutex_);
  if (!chunk_ || used_ + rounded > chunk_size_) {
    const size_t size = std::max(rounded, kChunkBytes);
    const std::optional<HugePageRegion> r = map_huge_pages(size);
    if (!r) fail("cannot allocate {} bytes for {}: {}", size, what, std::strerror(errno));
    chunk_ = {r->data, [region = *r](std::byte*) { unmap_huge_pages(region); }};
    chunk_size_ = size;
    used_ = 0;
  }
  std::shared_ptr<std::byte> part(chunk_, chunk_.get() + used_);
  used_ += rounded;
  return part;
}

}  // namespace ugrad
