#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "base/env.h"
#include "base/error.h"
#include "runtime/program_cache.h"
#include "test/capture_stderr.h"

using namespace ugrad;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp dir, removed on destruction.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("ugrad_test_cache_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

}  // namespace

TEST_SUITE("program_cache") {
  TEST_CASE("keys depend on source, target and flags, and on where one ends") {
    const std::string k = ProgramCache::make_key("src", "x86_64", "-O2");
    CHECK(k.size() == 64);
    CHECK(k == ProgramCache::make_key("src", "x86_64", "-O2"));
    CHECK(k != ProgramCache::make_key("src ", "x86_64", "-O2"));
    CHECK(k != ProgramCache::make_key("src", "gfx1100", "-O2"));
    CHECK(k != ProgramCache::make_key("src", "x86_64", "-O3"));
    CHECK(ProgramCache::make_key("ab", "c", "") != ProgramCache::make_key("a", "bc", ""));
  }

  TEST_CASE("memory only: put, get, counters, bad keys") {
    ProgramCache cache{fs::path()};
    CHECK_FALSE(cache.disk_enabled());
    const std::string key = ProgramCache::make_key("a", "b", "c");
    CHECK_FALSE(cache.get(key).has_value());
    cache.put(key, bytes_of("object"));
    CHECK(cache.get(key) == bytes_of("object"));
    CHECK(cache.stats().memory_hits == 1);
    CHECK(cache.stats().misses == 1);
    CHECK_THROWS_WITH_AS(cache.get("../../etc/passwd"), doctest::Contains("../../etc/passwd"),
                         Error);
    CHECK_THROWS_AS(cache.put(std::string(64, 'G'), {}), Error);
  }

  TEST_CASE("get_or_compile compiles once, then hits memory, then disk in a new process") {
    TempDir dir;
    int compiles = 0;
    auto compile = [&] {
      ++compiles;
      return bytes_of("machine code");
    };
    {
      ProgramCache cache(dir.path);
      CHECK(cache.get_or_compile("kernel", "cpu", "-O2", compile) == bytes_of("machine code"));
      CHECK(cache.get_or_compile("kernel", "cpu", "-O2", compile) == bytes_of("machine code"));
      CHECK(compiles == 1);
      CHECK(cache.stats().compiles == 1);
      CHECK(cache.stats().memory_hits == 1);
      const fs::path entry = cache.entry_path(ProgramCache::make_key("kernel", "cpu", "-O2"));
      CHECK(fs::exists(entry));
      const std::string version_dir = entry.parent_path().parent_path().filename().string();
      CHECK(version_dir == fmt::format("v{}", ProgramCache::kFormatVersion));
      // No temporary files are left behind.
      int files = 0;
      for (auto& e : fs::recursive_directory_iterator(dir.path)) files += e.is_regular_file();
      CHECK(files == 1);
    }
    ProgramCache fresh(dir.path);  // a later process: empty memory, same disk
    CHECK(fresh.get_or_compile("kernel", "cpu", "-O2", compile) == bytes_of("machine code"));
    CHECK(compiles == 1);
    CHECK(fresh.stats().disk_hits == 1);
    CHECK(fresh.stats().compiles == 0);
    fresh.clear_memory();
    CHECK(fresh.get(ProgramCache::make_key("kernel", "cpu", "-O2")).has_value());
    CHECK(fresh.stats().disk_hits == 2);
  }

  TEST_CASE("empty programs round-trip through disk") {
    TempDir dir;
    const std::string key = ProgramCache::make_key("", "", "");
    ProgramCache(dir.path).put(key, {});
    ProgramCache fresh(dir.path);
    auto got = fresh.get(key);
    REQUIRE(got.has_value());
    CHECK(got->empty());
  }

  TEST_CASE("truncated, corrupted, foreign and garbage entries are ignored and rewritten") {
    TempDir dir;
    const std::string key = ProgramCache::make_key("k", "cpu", "");
    const Bytes program = bytes_of(std::string(1000, 'p'));
    const fs::path entry = ProgramCache(dir.path).entry_path(key);
    auto write_raw = [&](const std::string& text) {
      std::ofstream(entry, std::ios::binary | std::ios::trunc) << text;
    };
    auto read_raw = [&] {
      std::ifstream f(entry, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(f), {});
    };
    ProgramCache(dir.path).put(key, program);
    const std::string good = read_raw();

    std::string flipped = good;
    flipped[flipped.size() - 3] ^= 1;
    std::string wrong_version = good;
    wrong_version[4] = 99;
    std::string other_key = good;
    other_key[20] ^= 1;
    for (const std::string& bad :
         {good.substr(0, good.size() - 1), good.substr(0, 10), std::string(), flipped,
          wrong_version, other_key, good + "extra", std::string(5000, '\xff')}) {
      write_raw(bad);
      ProgramCache cache(dir.path);
      CHECK_FALSE(cache.get(key).has_value());
      CHECK(cache.stats().bad_entries == 1);
      int compiles = 0;
      CHECK(cache.get_or_compile("k", "cpu", "", [&] {
        ++compiles;
        return program;
      }) == program);
      CHECK(compiles == 1);
      CHECK(read_raw() == good);  // rewritten
    }
  }

  TEST_CASE("entries of another format version are not read") {
    TempDir dir;
    const std::string key = ProgramCache::make_key("k", "cpu", "");
    ProgramCache cache(dir.path);
    cache.put(key, bytes_of("x"));
    const fs::path other = dir.path / "v0" / key.substr(0, 2) / key;
    fs::create_directories(other.parent_path());
    fs::copy_file(cache.entry_path(key), other);
    fs::remove(cache.entry_path(key));
    CHECK_FALSE(ProgramCache(dir.path).get(key).has_value());
  }

  TEST_CASE("an unwritable directory warns once and the cache carries on in memory") {
    TempDir dir;
    fs::create_directories(dir.path);
    std::ofstream(dir.path / "file") << "not a directory";
    ProgramCache cache(dir.path / "file" / "cache");  // cannot be created, even by root
    int compiles = 0;
    const std::string text = ugrad::test::capture_stderr([&] {
      for (int i = 0; i < 3; ++i) {
        const std::string src = "kernel " + std::to_string(i);
        cache.get_or_compile(src, "cpu", "", [&] {
          ++compiles;
          return bytes_of(src);
        });
        CHECK(cache.get_or_compile(src, "cpu", "", [&] {
          ++compiles;
          return bytes_of(src);
        }) == bytes_of(src));
      }
    });
    CHECK(compiles == 3);
    CHECK(cache.stats().memory_hits == 3);
    CHECK(text.find("warning: program cache: cannot write") != std::string::npos);
    CHECK(text.find("warning") == text.rfind("warning"));  // once
  }

  TEST_CASE("knobs: CACHE=0 disables disk, CACHE_DIR chooses the folder") {
    {
      ScopedKnob off(Knob::CACHE, "0");
      CHECK(default_cache_dir().empty());
      ProgramCache::reset_instance();
      CHECK_FALSE(ProgramCache::instance().disk_enabled());
    }
    TempDir dir;
    {
      ScopedKnob where(Knob::CACHE_DIR, dir.path.string());
      CHECK(default_cache_dir() == dir.path);
      ProgramCache::reset_instance();
      ProgramCache& cache = ProgramCache::instance();
      CHECK(cache.disk_enabled());
      cache.put(ProgramCache::make_key("a", "b", "c"), bytes_of("z"));
      CHECK(fs::exists(cache.entry_path(ProgramCache::make_key("a", "b", "c"))));
    }
    {
      ScopedKnob where(Knob::CACHE_DIR, "");
      const char* saved = getenv("XDG_CACHE_HOME");
      const std::optional<std::string> previous =
          saved ? std::optional<std::string>(saved) : std::nullopt;
      setenv("XDG_CACHE_HOME", "/some/xdg", 1);
      CHECK(default_cache_dir() == fs::path("/some/xdg/ugrad"));
      unsetenv("XDG_CACHE_HOME");
      if (const char* home = getenv("HOME"); home != nullptr && home[0] != '\0')
        CHECK(default_cache_dir() == fs::path(home) / ".cache" / "ugrad");
      if (previous) setenv("XDG_CACHE_HOME", previous->c_str(), 1);
    }
    ScopedKnob off(Knob::CACHE, "0");
    ProgramCache::reset_instance();  // leave the process-wide cache off the disk
  }

  TEST_CASE("concurrent writers of the same entry leave one valid entry") {
    TempDir dir;
    const std::string key = ProgramCache::make_key("race", "cpu", "");
    const Bytes program = bytes_of(std::string(100000, 'r'));
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t)
      writers.emplace_back([&] {
        ProgramCache cache(dir.path);
        for (int i = 0; i < 10; ++i) cache.put(key, program);
      });
    for (auto& w : writers) w.join();
    CHECK(ProgramCache(dir.path).get(key) == program);
  }
}
