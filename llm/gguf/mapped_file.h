// A read-only memory mapping of a whole file (POSIX mmap), unmapped when the last owner goes.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ugrad::llm {

class MappedFile {
 public:
  /// Maps `path` read-only; an Error names the file and the OS reason on failure.
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes (empty for an empty file).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  const uint8_t* data_;
  size_t size_;
};

}  // namespace ugrad::llm
