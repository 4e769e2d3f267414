#include "llm/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/huge_pages.h"
#include "base/quote.h"

namespace ugrad::llm {
namespace {

// Closes the descriptor on every way out of open().
struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// The text of /proc/meminfo (empty where there is none).
std::string meminfo() {
  std::ifstream in("/proc/meminfo");
  return {std::istreambuf_iterator<char>(in), {}};
}

// `size` bytes of the file read into huge-page memory (base/huge_pages.h).
HugePageRegion read_into_memory(int fd, size_t size, const std::string& path,
                                const ReadProgress& progress) {
  const std::optional<HugePageRegion> r = map_huge_pages(size);
  if (!r)
    fail(
        "gguf: cannot allocate {} bytes to read {} into memory: {} (mapping it instead needs "
        "no memory up front)",
        size, quote(path), std::strerror(errno));
  auto* data = reinterpret_cast<uint8_t*>(r->data);
  constexpr size_t kStep = size_t{64} << 20;  // read in steps, for the progress display
  for (size_t done = 0; done < size;) {
    const ssize_t got =
        ::pread(fd, data + done, std::min(kStep, size - done), static_cast<off_t>(done));
    if (got > 0) {
      done += static_cast<size_t>(got);
      if (progress) progress(path, done, size);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    const std::string why = got < 0 ? std::strerror(errno) : "the file ended early";
    unmap_huge_pages(*r);
    fail("gguf: cannot read {} ({} of {} bytes read): {}", quote(path), done, size, why);
  }
  ::mprotect(r->region, r->region_size, PROT_READ);  // read-only, as a mapping is
  return *r;
}

}  // namespace

size_t mem_available(std::string_view meminfo) {
  constexpr std::string_view key = "MemAvailable:";
  const size_t at = meminfo.find(key);
  if (at == std::string_view::npos) return SIZE_MAX;
  size_t kib = 0, i = at + key.size();
  while (i < meminfo.size() && meminfo[i] == ' ') ++i;
  const size_t digits = i;
  for (; i < meminfo.size() && meminfo[i] >= '0' && meminfo[i] <= '9'; ++i)
    kib = kib * 10 + size_t(meminfo[i] - '0');
  return i == digits ? SIZE_MAX : kib * 1024;
}

size_t mem_available() { return mem_available(meminfo()); }

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path, FileMemory how,
                                                   const ReadProgress& progress) {
  const Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) fail("gguf: cannot open {}: {}", quote(path), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) fail("gguf: cannot stat {}: {}", quote(path), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail("gguf: {} is not a regular file", quote(path));
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::shared_ptr<const MappedFile>(new MappedFile(nullptr, 0, nullptr, 0));
  // A copy that does not fit in the memory available now would only be reclaimed (or end the
  // process under overcommit): such a file is mapped.
  if (how == FileMemory::Read && size <= mem_available()) {
    const HugePageRegion r = read_into_memory(fd.fd, size, path, progress);
    return std::shared_ptr<const MappedFile>(
        new MappedFile(reinterpret_cast<const uint8_t*>(r.data), size, r.region, r.region_size));
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED)
    fail("gguf: cannot map {} ({} bytes): {}", quote(path), size, std::strerror(errno));
  // The mapping stays valid without the descriptor.
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const uint8_t*>(p), size, p, size));
}

MappedFile::~MappedFile() {
  if (region_) ::munmap(region_, region_size_);
}

}  // namespace ugrad::llm
