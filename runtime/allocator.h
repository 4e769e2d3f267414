// Device memory: the Allocator interface every device implements, an LRU cache of freed buffers in
// front of it, the host CPU allocator, and Buffer, a ref-counted lazily allocated block of bytes
// (or a view into one) that the rest of the runtime passes around.
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"

namespace ugrad {

/// A device could not satisfy an allocation (as opposed to a request that is nonsense).
struct OutOfMemory : Error {
  using Error::Error;
};

/// Device memory. A handle is opaque: a host pointer on the CPU, a device pointer on a GPU.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Allocates `bytes` (0 is allowed and gives a distinct handle); OutOfMemory when the device is
  /// full.
  virtual void* alloc(size_t bytes) = 0;
  /// Releases a handle returned by alloc(bytes) with the same `bytes`.
  virtual void free(void* handle, size_t bytes) = 0;
  /// Copies `bytes` host bytes from `src` into device memory at `dst`.
  virtual void copy_in(void* dst, const void* src, size_t bytes) = 0;
  /// Copies `bytes` from device memory at `src` to host memory at `dst`.
  virtual void copy_out(void* dst, const void* src, size_t bytes) = 0;
  /// The handle `bytes` bytes past `handle` (views into a buffer).
  virtual void* offset(void* handle, size_t bytes) {
    return static_cast<std::byte*>(handle) + bytes;
  }
  /// A host pointer to the memory of `handle`, or nullptr where it is not host-addressable.
  virtual void* as_host_ptr(void* /*handle*/) { return nullptr; }
  /// True when the memory must not be written.
  virtual bool read_only() const { return false; }
};

/// Host memory, 64-byte aligned (one cache line, the widest vector register).
class CpuAllocator final : public Allocator {
 public:
  static constexpr size_t kAlignment = 64;
  /// Allocates; an Error for sizes beyond physical memory, OutOfMemory when the system refuses.
  void* alloc(size_t bytes) override;
  void free(void* handle, size_t bytes) override;
  void copy_in(void* dst, const void* src, size_t bytes) override;
  void copy_out(void* dst, const void* src, size_t bytes) override;
  void* as_host_ptr(void* handle) override { return handle; }
};

/// Caches freed buffers by size and hands them out again, keeping at most `max_cached_bytes`;
/// the least recently freed go first. On OutOfMemory it empties the cache and retries once.
/// Thread-safe.
class LruAllocator final : public Allocator {
 public:
  /// Wraps `inner`, caching up to `max_cached_bytes` of freed memory.
  LruAllocator(std::shared_ptr<Allocator> inner, size_t max_cached_bytes);
  /// Returns every cached buffer to the inner allocator.
  ~LruAllocator() override;
  void* alloc(size_t bytes) override;
  void free(void* handle, size_t bytes) override;
  void copy_in(void* dst, const void* src, size_t bytes) override;
  void copy_out(void* dst, const void* src, size_t bytes) override;
  void* offset(void* handle, size_t bytes) override;
  void* as_host_ptr(void* handle) override;

  /// Returns every cached buffer to the inner allocator.
  void free_cache();
  /// Bytes currently held in the cache.
  size_t cached_bytes() const;
  /// Allocations served from the cache, and those passed to the inner allocator.
  int64_t hits() const;
  int64_t misses() const;

 private:
  struct Entry {
    size_t bytes;
    void* handle;
  };
  void evict_oldest_locked();

  std::shared_ptr<Allocator> inner_;
  size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently freed
  std::unordered_map<size_t, std::vector<std::list<Entry>::iterator>> by_size_;
  size_t cached_bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

/// Host bytes owned elsewhere (a memory-mapped file), handed out as the memory of one buffer
/// without copying. Read-only: copying into it is an Error.
class HostMemoryAllocator final : public Allocator {
 public:
  /// `owner` keeps `bytes` alive as long as the buffer exists.
  HostMemoryAllocator(std::span<const std::byte> bytes, std::shared_ptr<const void> owner)
      : bytes_(bytes), owner_(std::move(owner)) {}
  void* alloc(size_t bytes) override;
  void free(void*, size_t) override {}
  void copy_in(void* dst, const void* src, size_t bytes) override;
  void copy_out(void* dst, const void* src, size_t bytes) override;
  void* as_host_ptr(void* handle) override { return handle; }
  bool read_only() const override { return true; }

 private:
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;
};

class Buffer;
/// Buffers are shared: a view keeps its base alive, a kernel's argument list keeps its buffers.
using BufferRef = std::shared_ptr<Buffer>;

/// `size` bytes on a device, allocated on first use; or a view of `size` bytes at an offset into
/// a base buffer, sharing its memory (the memory planner's arena hands out views). Not
/// thread-safe: one thread allocates and copies at a time.
class Buffer {
 public:
  /// A buffer of `size` bytes on `device`, to be allocated by `allocator` on first use.
  static BufferRef make(std::string device, size_t size, std::shared_ptr<Allocator> allocator);
  /// A view of `size` bytes at byte `offset` into `base` (views of views resolve to the root).
  static BufferRef view(const BufferRef& base, size_t offset, size_t size);
  /// Frees the memory of a root buffer that was allocated.
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  /// The device name, e.g. "CPU" or "AMD:0".
  const std::string& device() const { return device_; }
  /// Size in bytes.
  size_t size() const { return size_; }
  /// Byte offset into the root buffer (0 for a root).
  size_t offset() const { return offset_; }
  /// The root buffer of a view, or nullptr for a root.
  const BufferRef& base() const { return base_; }
  /// Whether the memory exists yet (for a view: whether its root's does).
  bool is_allocated() const;
  /// Allocates the memory now if it was not allocated yet (a view allocates its root).
  void ensure_allocated();
  /// The device handle of the first byte, allocating first if needed.
  void* handle();
  /// A host pointer to the first byte, or nullptr where the device memory is not host-addressable.
  void* as_host_ptr();
  /// True for memory that must not be written (host memory wrapped in place).
  bool read_only() const;
  /// Copies `src` (exactly size() bytes) into the buffer.
  void copy_in(std::span<const std::byte> src);
  /// Copies the buffer into `dst` (exactly size() bytes).
  void copy_out(std::span<std::byte> dst);

 private:
  Buffer(std::string device, size_t size, std::shared_ptr<Allocator> allocator, BufferRef base,
         size_t offset);

  std::string device_;
  size_t size_;
  std::shared_ptr<Allocator> allocator_;
  BufferRef base_;
  size_t offset_;
  void* handle_ = nullptr;  // roots only
};

}  // namespace ugrad
