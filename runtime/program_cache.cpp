#include "runtime/program_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "base/env.h"
#include "base/error.h"
#include "base/sha256.h"

namespace ugrad {
namespace {

constexpr char kMagic[4] = {'U', 'G', 'P', 'C'};
// magic, format version (u32 LE), payload length (u64 LE), key digest, payload digest
constexpr size_t kHeaderBytes = 4 + 4 + 8 + 32 + 32;

bool is_valid_key(const std::string& key) {
  if (key.size() != 64) return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void check_key(const std::string& key) {
  if (!is_valid_key(key))
    fail("program cache: key '{}' is not 64 lowercase hex digits (use ProgramCache::make_key)",
         key);
}

Sha256Digest key_digest(const std::string& key) {
  Sha256Digest d{};
  auto nibble = [](char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  for (size_t i = 0; i < d.size(); ++i) d[i] = (nibble(key[2 * i]) << 4) | nibble(key[2 * i + 1]);
  return d;
}

void put_le(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// Closes a file descriptor on scope exit.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads up to `size` bytes from `fd` into `out`; returns how many it got.
size_t read_up_to(int fd, uint8_t* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

// Writes all of `data` to `fd`; false with errno set on failure.
bool write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::mutex g_instance_mutex;
std::unique_ptr<ProgramCache> g_instance;

}  // namespace

std::filesystem::path default_cache_dir() {
  if (knob_int(Knob::CACHE) == 0) return {};
  if (std::string dir = knob_str(Knob::CACHE_DIR); !dir.empty()) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::filesystem::path(xdg) / "ugrad";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0')
    return std::filesystem::path(home) / ".cache" / "ugrad";
  return {};
}

ProgramCache::ProgramCache(std::filesystem::path dir) {
  if (!dir.empty()) version_dir_ = dir / fmt::format("v{}", kFormatVersion);
}

ProgramCache& ProgramCache::instance() {
  std::lock_guard lock(g_instance_mutex);
  if (!g_instance) g_instance = std::make_unique<ProgramCache>(default_cache_dir());
  return *g_instance;
}

void ProgramCache::reset_instance() {
  std::lock_guard lock(g_instance_mutex);
  g_instance = std::make_unique<ProgramCache>(default_cache_dir());
}

std::string ProgramCache::make_key(std::string_view source, std::string_view target,
                                   std::string_view flags) {
  // Length prefixes keep ("ab", "c") and ("a", "bc") apart.
  Sha256 hasher;
  for (std::string_view part : {source, target, flags}) {
    uint8_t len[8];
    put_le(len, part.size(), 8);
    hasher.update(len, sizeof(len));
    hasher.update(part);
  }
  return to_hex(hasher.finish());
}

std::filesystem::path ProgramCache::entry_path(const std::string& key) const {
  if (version_dir_.empty()) return {};
  check_key(key);
  return version_dir_ / key.substr(0, 2) / key;
}

std::optional<Bytes> ProgramCache::get(const std::string& key) {
  check_key(key);
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  std::optional<Bytes> bytes = disk_enabled() ? read_entry(key) : std::nullopt;
  std::lock_guard lock(mutex_);
  if (!bytes) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.disk_hits;
  memory_.insert_or_assign(key, *bytes);
  return bytes;
}

void ProgramCache::put(const std::string& key, const Bytes& bytes) {
  check_key(key);
  {
    std::lock_guard lock(mutex_);
    memory_.insert_or_assign(key, bytes);
  }
  if (disk_enabled()) write_entry(key, bytes);
}

Bytes ProgramCache::get_or_compile(std::string_view source, std::string_view target,
                                   std::string_view flags, const std::function<Bytes()>& compile) {
  const std::string key = make_key(source, target, flags);
  if (std::optional<Bytes> hit = get(key)) return std::move(*hit);
  Bytes bytes = compile();
  {
    std::lock_guard lock(mutex_);
    ++stats_.compiles;
  }
  put(key, bytes);
  return bytes;
}

ProgramCache::Stats ProgramCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void ProgramCache::reset_stats() {
  std::lock_guard lock(mutex_);
  stats_ = Stats{};
}

void ProgramCache::clear_memory() {
  std::lock_guard lock(mutex_);
  memory_.clear();
}

std::optional<Bytes> ProgramCache::read_entry(const std::string& key) {
  Fd f{::open(entry_path(key).c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return std::nullopt;  // not cached (or unreadable: a miss either way)
  // The header is checked against the file's size before the payload is read, so a stray huge
  // file costs no allocation.
  struct stat st {};
  uint8_t h[kHeaderBytes];
  const Sha256Digest want_key = key_digest(key);
  std::optional<Bytes> payload;
  if (::fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode) &&
      read_up_to(f.fd, h, kHeaderBytes) == kHeaderBytes && std::memcmp(h, kMagic, 4) == 0 &&
      get_le(h + 4, 4) == kFormatVersion &&
      get_le(h + 8, 8) == static_cast<uint64_t>(st.st_size) - kHeaderBytes &&
      std::memcmp(h + 16, want_key.data(), 32) == 0) {
    Bytes bytes(static_cast<size_t>(get_le(h + 8, 8)));
    if (read_up_to(f.fd, bytes.data(), bytes.size()) == bytes.size() &&
        std::memcmp(h + 48, sha256(bytes.data(), bytes.size()).data(), 32) == 0)
      payload = std::move(bytes);
  }
  if (!payload) {
    std::lock_guard lock(mutex_);
    ++stats_.bad_entries;
  }
  return payload;
}

void ProgramCache::write_entry(const std::string& key, const Bytes& bytes) {
  {
    std::lock_guard lock(mutex_);
    if (!disk_writable_) return;
  }
  static std::atomic<uint64_t> tmp_counter{0};
  const std::filesystem::path path = entry_path(key);
  const std::filesystem::path tmp =
      path.string() + fmt::format(".tmp.{}.{}", ::getpid(), tmp_counter.fetch_add(1));

  uint8_t header[kHeaderBytes];
  std::memcpy(header, kMagic, 4);
  put_le(header + 4, kFormatVersion, 4);
  put_le(header + 8, bytes.size(), 8);
  const Sha256Digest kd = key_digest(key), sum = sha256(bytes.data(), bytes.size());
  std::memcpy(header + 16, kd.data(), 32);
  std::memcpy(header + 48, sum.data(), 32);

  std::string problem;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    problem = ec.message();
  } else {
    Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
    if (f.fd < 0 || !write_all(f.fd, header, kHeaderBytes) ||
        !write_all(f.fd, bytes.data(), bytes.size()))
      problem = std::strerror(errno);
    else if (::close(std::exchange(f.fd, -1)) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0)
      problem = std::strerror(errno);
  }
  if (problem.empty()) return;
  ::unlink(tmp.c_str());
  std::lock_guard lock(mutex_);
  if (!std::exchange(disk_writable_, false)) return;  // already warned
  fmt::print(stderr,
             "ugrad: warning: program cache: cannot write '{}': {}; caching programs in memory "
             "only\n",
             path.string(), problem);
}

}  // namespace ugrad
