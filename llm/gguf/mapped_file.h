// A whole file's bytes in memory, read-only, released when the last owner goes: either a memory
// mapping (POSIX mmap, nothing read until touched) or a copy read into memory backed by huge pages
// where the kernel offers them (transparent huge pages on a 2 MiB-aligned region).
//
// A mapping's page size is the page cache's: a file read from disk comes in large folios, but one
// written moments ago (a fresh download, a benchmark's model) sits in 4 KiB pages, and a Q4_K
// decode step that streams 335 MB of weights through 4 KiB pages ran 47-55 tok/s where the same
// weights in huge pages ran 88-91 (Zen 5, 2 cores). A CPU that runs the model from host memory
// reads it in; a GPU, which only uploads the weights, maps it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ugrad::llm {

/// How a file's bytes are held: mapped, or read into (huge-page) memory.
enum class FileMemory { Mapped, Read };

/// Told, while a file is read into memory, the bytes read so far of the file's total.
using ReadProgress = std::function<void(const std::string& path, size_t done, size_t total)>;

/// Bytes of MemAvailable in the text of /proc/meminfo; SIZE_MAX when it has none.
size_t mem_available(std::string_view meminfo);
/// Bytes of memory available now (/proc/meminfo); SIZE_MAX where unknown.
size_t mem_available();

class MappedFile {
 public:
  /// The bytes of `path`, held as `how` says (a file to read that is larger than the memory
  /// available now is mapped); an Error names the file and the OS reason on failure (a file that
  /// cannot be opened, mapped, read or fully read, or memory that cannot be allocated for it).
  /// `progress` hears of a read as it goes (a mapping reads nothing up front).
  static std::shared_ptr<const MappedFile> open(const std::string& path,
                                                FileMemory how = FileMemory::Mapped,
                                                const ReadProgress& progress = {});
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes (empty for an empty file).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size, void* region, size_t region_size)
      : data_(data), size_(size), region_(region), region_size_(region_size) {}
  const uint8_t* data_;
  size_t size_;
  void* region_;  // what munmap releases: the mapping, or the read copy's region
  size_t region_size_;
};

}  // namespace ugrad::llm
