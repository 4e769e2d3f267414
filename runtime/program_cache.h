// Compiled programs (object files, HSA code objects) cached in memory and on disk, keyed by the
// SHA-256 of everything that determines the output: rendered source, target name, compile flags.
//
// Disk layout: <dir>/v<kFormatVersion>/<first two hex digits of key>/<key>. Each entry is a header
// (magic, format version, payload length, key, SHA-256 of the payload) followed by the payload,
// written to a temporary file in the same folder and renamed into place, so readers see a whole
// entry or none. An entry that fails any check is ignored (a miss) and rewritten by the next put. A
// folder that cannot be written produces one warning, after which the cache carries on in memory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ugrad {

/// Compiled program bytes.
using Bytes = std::vector<uint8_t>;

class ProgramCache {
 public:
  /// Bumped whenever the entry format or the meaning of a key changes; old entries are not read.
  static constexpr uint32_t kFormatVersion = 1;

  struct Stats {
    int64_t memory_hits = 0;
    int64_t disk_hits = 0;
    int64_t misses = 0;
    int64_t compiles = 0;     // compile functions run by get_or_compile
    int64_t bad_entries = 0;  // disk entries ignored as truncated, corrupted or foreign
  };

  /// A cache whose disk layer lives under `dir` (created on first write); empty = memory only.
  explicit ProgramCache(std::filesystem::path dir);

  /// The process-wide cache, created on first use with default_cache_dir().
  static ProgramCache& instance();
  /// Replaces the process-wide cache with one built from the current knobs (tests, tools).
  static void reset_instance();

  /// The cache key of a program: hex SHA-256 over the length-prefixed source, target and flags.
  static std::string make_key(std::string_view source, std::string_view target,
                              std::string_view flags);

  /// The bytes stored under `key` (64 lowercase hex digits), from memory or else from disk.
  std::optional<Bytes> get(const std::string& key);
  /// Stores `bytes` under `key` in memory and, when enabled, on disk.
  void put(const std::string& key, const Bytes& bytes);
  /// The cached program for (source, target, flags), running `compile` and storing its result on a
  /// miss.
  Bytes get_or_compile(std::string_view source, std::string_view target, std::string_view flags,
                       const std::function<Bytes()>& compile);

  /// Hit, miss and compile counters since construction or reset_stats().
  Stats stats() const;
  /// Zeroes the counters.
  void reset_stats();
  /// Drops the in-memory layer (the disk layer stays).
  void clear_memory();
  /// Whether entries are read from and written to disk.
  bool disk_enabled() const { return !version_dir_.empty(); }
  /// The file that holds `key` on disk (empty when the disk layer is off).
  std::filesystem::path entry_path(const std::string& key) const;

 private:
  std::optional<Bytes> read_entry(const std::string& key);
  void write_entry(const std::string& key, const Bytes& bytes);

  std::filesystem::path version_dir_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Bytes> memory_;
  Stats stats_;
  bool disk_writable_ = true;
};

/// The disk cache directory the knobs select: CACHE_DIR, else $XDG_CACHE_HOME/ugrad, else
/// $HOME/.cache/ugrad; empty (memory only) when CACHE=0 or no home is known.
std::filesystem::path default_cache_dir();

}  // namespace ugrad
