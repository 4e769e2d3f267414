#include "runtime/allocator.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ugrad {
namespace {

size_t physical_memory_bytes() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return SIZE_MAX;  // unknown: let the system decide
    return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
  }();
  return bytes;
}

}  // namespace

// ---- CpuAllocator ----

void* CpuAllocator::alloc(size_t bytes) {
  if (bytes > physical_memory_bytes())
    fail("cpu: cannot allocate {} bytes: more than the machine's {} bytes of physical memory",
         bytes, physical_memory_bytes());
  // aligned_alloc needs a multiple of the alignment; a zero-byte buffer still gets its own line.
  const size_t rounded =
      bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw OutOfMemory(fmt::format("cpu: out of memory allocating {} bytes", bytes));
  return p;
}

void CpuAllocator::free(void* handle, size_t /*bytes*/) { std::free(handle); }

void CpuAllocator::copy_in(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuAllocator::copy_out(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

// ---- LruAllocator ----

LruAllocator::LruAllocator(std::shared_ptr<Allocator> inner, size_t max_cached_bytes)
    : inner_(std::move(inner)), max_cached_bytes_(max_cached_bytes) {
  if (!inner_) fail("lru allocator: no inner allocator");
}

LruAllocator::~LruAllocator() { free_cache(); }

void* LruAllocator::alloc(size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_size_.find(bytes); it != by_size_.end() && !it->second.empty()) {
      const auto entry = it->second.back();  // the most recently freed: likeliest still in cache
      it->second.pop_back();
      void* handle = entry->handle;
      lru_.erase(entry);
      cached_bytes_ -= bytes;
      ++hits_;
      return handle;
    }
    ++misses_;
  }
  try {
    return inner_->alloc(bytes);
  } catch (const OutOfMemory&) {
    free_cache();
    return inner_->alloc(bytes);
  }
}

void LruAllocator::free(void* handle, size_t bytes) {
  if (bytes > max_cached_bytes_) return inner_->free(handle, bytes);
  std::lock_guard lock(mutex_);
  lru_.push_front(Entry{bytes, handle});
  by_size_[bytes].push_back(lru_.begin());
  cached_bytes_ += bytes;
  while (cached_bytes_ > max_cached_bytes_) evict_oldest_locked();
}

void LruAllocator::evict_oldest_locked() {
  UGRAD_ASSERT(!lru_.empty());
  const auto oldest = std::prev(lru_.end());
  auto& bucket = by_size_[oldest->bytes];
  // Within a size, entries are appended as they are freed, so the oldest is the first.
  UGRAD_ASSERT(!bucket.empty() && bucket.front() == oldest);
  bucket.erase(bucket.begin());
  cached_bytes_ -= oldest->bytes;
  inner_->free(oldest->handle, oldest->bytes);
  lru_.erase(oldest);
}

void LruAllocator::free_cache() {
  std::lock_guard lock(mutex_);
  for (const Entry& e : lru_) inner_->free(e.handle, e.bytes);
  lru_.clear();
  by_size_.clear();
  cached_bytes_ = 0;
}

void LruAllocator::copy_in(void* dst, const void* src, size_t bytes) {
  inner_->copy_in(dst, src, bytes);
}
void LruAllocator::copy_out(void* dst, const void* src, size_t bytes) {
  inner_->copy_out(dst, src, bytes);
}
void* LruAllocator::offset(void* handle, size_t bytes) { return inner_->offset(handle, bytes); }
void* LruAllocator::as_host_ptr(void* handle) { return inner_->as_host_ptr(handle); }

size_t LruAllocator::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}
int64_t LruAllocator::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}
int64_t LruAllocator::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

// ---- Buffer ----

Buffer::Buffer(std::string device, size_t size, std::shared_ptr<Allocator> allocator,
               BufferRef base, size_t offset)
    : device_(std::move(device)),
      size_(size),
      allocator_(std::move(allocator)),
      base_(std::move(base)),
      offset_(offset) {}

BufferRef Buffer::make(std::string device, size_t size, std::shared_ptr<Allocator> allocator) {
  if (!allocator) fail("buffer on '{}': no allocator", device);
  return BufferRef(new Buffer(std::move(device), size, std::move(allocator), nullptr, 0));
}

BufferRef Buffer::view(const BufferRef& base, size_t offset, size_t size) {
  if (!base) fail("buffer view: no base buffer");
  if (offset > base->size_ || size > base->size_ - offset)
    fail("buffer view: bytes [{}, {}+{}) are outside the {} bytes of its base buffer on '{}'",
         offset, offset, size, base->size_, base->device_);
  const BufferRef& root = base->base_ ? base->base_ : base;
  return BufferRef(new Buffer(base->device_, size, base->allocator_, root, base->offset_ + offset));
}

Buffer::~Buffer() {
  if (handle_ != nullptr) allocator_->free(handle_, size_);
}

bool Buffer::is_allocated() const { return base_ ? base_->handle_ != nullptr : handle_ != nullptr; }

void Buffer::ensure_allocated() {
  if (base_) return base_->ensure_allocated();
  if (handle_ == nullptr) handle_ = allocator_->alloc(size_);
}

void* Buffer::handle() {
  ensure_allocated();
  if (!base_) return handle_;
  return offset_ == 0 ? base_->handle_ : allocator_->offset(base_->handle_, offset_);
}

bool Buffer::read_only() const { return base_ ? base_->read_only() : allocator_->read_only(); }

void* Buffer::as_host_ptr() { return allocator_->as_host_ptr(handle()); }

void Buffer::copy_in(std::span<const std::byte> src) {
  if (src.size() != size_)
    fail("buffer on '{}': copy_in of {} bytes into a buffer of {} bytes", device_, src.size(),
         size_);
  void* dst = handle();
  if (size_ > 0) allocator_->copy_in(dst, src.data(), size_);
}

void Buffer::copy_out(std::span<std::byte> dst) {
  if (dst.size() != size_)
    fail("buffer on '{}': copy_out of a buffer of {} bytes into {} bytes", device_, size_,
         dst.size());
  void* src = handle();
  if (size_ > 0) allocator_->copy_out(dst.data(), src, size_);
}

void* HostMemoryAllocator::alloc(size_t bytes) {
  if (bytes != bytes_.size())
    internal_error("host memory of {} bytes asked for {} bytes", bytes_.size(), bytes);
  // Kernels take `void*` arguments; the buffer is only ever read (copy_in refuses).
  return const_cast<std::byte*>(bytes_.data());
}

void HostMemoryAllocator::copy_in(void*, const void*, size_t) {
  fail("cannot write into a buffer that wraps read-only host memory (a mapped file)");
}

void HostMemoryAllocator::copy_out(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
}

}  // namespace ugrad
