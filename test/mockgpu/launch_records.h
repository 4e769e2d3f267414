// Reading libmockhip.so's launch records from the process that loaded it (tests, benchmarks):
// ugrad's HIP loader dlopens the library privately, so the records are fetched through dlsym.
#pragma once
#include <dlfcn.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "test/mockgpu/counters.h"

namespace ugrad::mockgpu {

namespace detail {
// The symbol `name` of the already loaded library at lib_path.
inline void* mockhip_symbol(const std::string& lib_path, const char* name) {
  void* lib = dlopen(lib_path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) fail("mockgpu: {} is not loaded (open the AMD device first)", lib_path);
  void* sym = dlsym(lib, name);
  dlclose(lib);  // the HIP loader keeps its own reference
  if (!sym) fail("mockgpu: {} has no {}: not libmockhip.so?", lib_path, name);
  return sym;
}
}  // namespace detail

/// Every launch libmockhip.so (loaded from lib_path) recorded, oldest first.
inline std::vector<LaunchRecord> launch_records(const std::string& lib_path) {
  auto count =
      reinterpret_cast<size_t (*)()>(detail::mockhip_symbol(lib_path, "mockhip_launch_count"));
  auto record = reinterpret_cast<bool (*)(size_t, LaunchRecord*)>(
      detail::mockhip_symbol(lib_path, "mockhip_launch_record"));
  std::vector<LaunchRecord> records(count());
  for (size_t i = 0; i < records.size(); ++i)
    if (!record(i, &records[i])) records.resize(i);
  return records;
}

/// The counters of the most recent launch; an Error when there was none.
inline LaunchCounters last_launch_counters(const std::string& lib_path) {
  std::vector<LaunchRecord> records = launch_records(lib_path);
  if (records.empty()) fail("mockgpu: no launch recorded by {}", lib_path);
  return records.back().counters;
}

/// Forgets the recorded launches (a benchmark between phases).
inline void clear_launch_records(const std::string& lib_path) {
  reinterpret_cast<void (*)()>(detail::mockhip_symbol(lib_path, "mockhip_clear_launch_records"))();
}

}  // namespace ugrad::mockgpu
