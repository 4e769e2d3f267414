// The HIP runtime, loaded with dlopen (never linked): one table of function pointers, and the
// conversion of every HIP error into ugrad::Error naming the call, the code and its name.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/amd/hip_min.h"

namespace ugrad {
namespace hip {

struct HipApi {
#define UGRAD_HIP_MEMBER(name, ret, params) ret(*name) params = nullptr;
  UGRAD_FOR_EACH_HIP_FUNCTION(UGRAD_HIP_MEMBER)
#undef UGRAD_HIP_MEMBER
  std::string library;  // the path dlopen succeeded with

  /// Throws Error "hip: <call> failed: <name> (<code>): <description>" unless err is hipSuccess.
  void check(hipError_t err, std::string_view call) const;
};

}  // namespace hip
using hip::HipApi;

/// The HIP table, loading the library on first use: HIP_LIB knob if set, else libamdhip64.so,
/// .so.6, .so.5. No library -> "AMD device unavailable: libamdhip64.so not found (install ROCm 5.5
/// or newer)". Thread-safe; a library once loaded stays loaded.
const HipApi& hip_api();

/// HIP's version number (major * 10000000 + minor * 100000 + patch) as {major, minor}.
std::pair<int, int> hip_version(int encoded);

/// The architecture name ("gfx1100:sramecc-:xnack-") inside a hipDeviceProp_t of any layout, found
/// by scanning for "gfx" + alphanumerics; "" if none.
std::string gcn_arch_name_in_properties(std::span<const unsigned char> props);

}  // namespace ugrad
