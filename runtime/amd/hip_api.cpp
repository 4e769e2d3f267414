#include "runtime/amd/hip_api.h"

#include <dlfcn.h>

#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/env.h"
#include "base/error.h"

namespace ugrad {

using namespace hip;

namespace {

std::unique_ptr<HipApi> load_table(void* handle, const std::string& path) {
  auto api = std::make_unique<HipApi>();
  api->library = path;
#define UGRAD_HIP_LOAD(name, ret, params)                            \
  api->name = reinterpret_cast<ret(*) params>(dlsym(handle, #name)); \
  if (!api->name)                                                    \
    fail("AMD device unavailable: {} has no symbol {} (install ROCm 5.5 or newer)", path, #name);
  UGRAD_FOR_EACH_HIP_FUNCTION(UGRAD_HIP_LOAD)
#undef UGRAD_HIP_LOAD
  return api;
}

}  // namespace

void HipApi::check(hipError_t err, std::string_view call) const {
  if (err == hip::hipSuccess) return;
  const char* name = hipGetErrorName ? hipGetErrorName(err) : nullptr;
  const char* text = hipGetErrorString ? hipGetErrorString(err) : nullptr;
  fail("hip: {} failed: {} ({}){}{}", call, name ? name : "unknown error", err, text ? ": " : "",
       text ? text : "");
}

const HipApi& hip_api() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<HipApi>> loaded;  // by HIP_LIB value; never unloaded
  std::lock_guard<std::mutex> lock(mutex);
  const std::string knob = knob_str(Knob::HIP_LIB);
  if (auto it = loaded.find(knob); it != loaded.end()) return *it->second;
  std::vector<std::string> candidates;
  if (!knob.empty())
    candidates.push_back(knob);
  else
    candidates = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  std::string last_error;
  for (const std::string& path : candidates) {
    // RTLD_LOCAL: HIP's comgr brings its own LLVM; keep its symbols out of the global namespace.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      last_error = e ? e : "dlopen failed";
      continue;
    }
    auto api = load_table(handle, path);
    return *(loaded[knob] = std::move(api));
  }
  if (!knob.empty())
    fail(
        "AMD device unavailable: libamdhip64.so not found (install ROCm 5.5 or newer); "
        "HIP_LIB={}: {}",
        knob, last_error);
  fail("AMD device unavailable: libamdhip64.so not found (install ROCm 5.5 or newer)");
}

std::pair<int, int> hip_version(int encoded) {
  return {encoded / 10000000, (encoded / 100000) % 100};
}

std::string gcn_arch_name_in_properties(std::span<const unsigned char> props) {
  for (size_t i = 0; i + 4 <= props.size(); ++i) {
    if (props[i] != 'g' || props[i + 1] != 'f' || props[i + 2] != 'x' ||
        !std::isalnum(props[i + 3]) || (i > 0 && std::isalnum(props[i - 1])))
      continue;
    size_t end = i + 3;
    // gcnArchName: "gfx1100" optionally followed by ":sramecc-:xnack-" style feature flags.
    while (
        end < props.size() && props[end] != 0 &&
        (std::isalnum(props[end]) || props[end] == ':' || props[end] == '-' || props[end] == '+'))
      ++end;
    return std::string(reinterpret_cast<const char*>(props.data()) + i, end - i);
  }
  return {};
}

}  // namespace ugrad
