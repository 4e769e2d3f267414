// Host memory backed by transparent huge pages: an anonymous region whose 2 MiB-aligned part the
// kernel backs with 2 MiB pages where it offers them (madvise; where THP is off the pages are
// 4 KiB and nothing fails). Weights that every decode step or prefill chunk streams read much
// faster there than through 4 KiB pages (one TLB entry per 2 MiB), and a first touch faults in
// 2 MiB at once (a 4 KiB fault cost ~13 us in a VM).
#pragma once
#include <cstddef>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ugrad {

/// A zero-filled anonymous region holding `bytes` from `data`, a 2 MiB boundary.
struct HugePageRegion {
  void* region = nullptr;  // what munmap releases
  size_t region_size = 0;
  std::byte* data = nullptr;
};

/// The region for `bytes` (> 0), or nullopt (errno says why) when it cannot be mapped.
std::optional<HugePageRegion> map_huge_pages(size_t bytes);
/// Releases a region of map_huge_pages.
void unmap_huge_pages(const HugePageRegion& r);

/// Faults in the pages of `ranges` and writes each once, on a thread of its own, so that memory
/// about to be written is ready while the caller does other work. The write is an atomic OR of
/// zero into one byte per page: no value changes, so writes to the ranges meanwhile are safe.
/// Both steps count in a VM: a first touch cost ~13 us per 4 KiB page, and a page that
/// MADV_POPULATE_WRITE had made resident still cost ~5 us on its first write (a Firecracker guest
/// whose host backs its memory lazily), which the write here takes off the caller's path.
/// `owner` keeps the memory alive until the thread is done; the returned future's destructor
/// waits for it. Where the kernel lacks the advice (before Linux 5.14) the write faults the pages.
std::future<void> prefault_async(std::vector<std::span<std::byte>> ranges,
                                 std::shared_ptr<const void> owner = nullptr);

/// Bump allocation of huge-page memory for buffers that live as long as a model (weights repacked
/// at load): chunks of at least kChunkBytes, so that small buffers do not each leave the rest of
/// a 2 MiB page unused. A chunk is released when the last buffer in it goes and the arena has
/// moved on to another. Thread-safe.
class HugePageArena {
 public:
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  static constexpr size_t kAlignment = 64;
  /// `bytes` (> 0) of zero-filled memory, kAlignment-aligned; an Error naming `what` and the OS
  /// reason when it cannot be had.
  std::shared_ptr<std::byte> allocate(size_t bytes, std::string_view what);

 private:
  std::mutex mutex_;
  std::shared_ptr<std::byte> chunk_;
  size_t chunk_size_ = 0, used_ = 0;
};

}  // namespace ugrad
