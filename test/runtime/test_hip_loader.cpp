// The HIP loader without a GPU: a missing library, Debian's libamdhip64.so.5 with no device, and
// the layout-independent architecture name scan.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/hip_api.h"
#include "runtime/hip_device.h"
#include "uop/env.h"
#include "uop/error.h"

using namespace ugrad;

namespace {
std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
constexpr const char* kDebianHip = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
}  // namespace

TEST_SUITE("hip_loader") {
  TEST_CASE("a missing library is 'AMD device unavailable' naming the path tried") {
    ScopedKnob lib(Knob::HIP_LIB, "/nonexistent/libamdhip64.so");
    std::string e = error_of([] { hip_api(); });
    CHECK(e.starts_with(
        "AMD device unavailable: libamdhip64.so not found (install ROCm 5.5 or newer)"));
    CHECK(e.find("/nonexistent/libamdhip64.so") != std::string::npos);
    CHECK(error_of([] { HipDevice::open(); }) == e);
  }

  TEST_CASE("the library without a GPU is a clear no-device error") {
    void* probe = dlopen(kDebianHip, RTLD_NOW | RTLD_LOCAL);
    if (!probe) {
      MESSAGE("skipped: " << kDebianHip << " is not installed");
      return;
    }
    dlclose(probe);
    ScopedKnob lib(Knob::HIP_LIB, kDebianHip);
    const HipApi& api = hip_api();
    CHECK(api.library == kDebianHip);
    int count = -1;
    CHECK(api.hipGetDeviceCount(&count) == hip::hipErrorNoDevice);
    CHECK(count == 0);
    std::string e = error_of([] { HipDevice::open(); });
    CHECK(e.starts_with("AMD device unavailable"));
    CHECK(e.find("no AMD GPU") != std::string::npos);
    CHECK(e.find("hipErrorNoDevice") != std::string::npos);
    // HIP errors carry the call, the code and its name.
    std::string checked = error_of([&] { api.check(hip::hipErrorNoDevice, "hipGetDeviceCount"); });
    CHECK(checked.find("hipGetDeviceCount") != std::string::npos);
    CHECK(checked.find("(100)") != std::string::npos);
    CHECK(checked.find("hipErrorNoDevice") != std::string::npos);
  }

  TEST_CASE("HIP version numbers decode as major.minor") {
    CHECK(hip_version(50221153) == std::pair<int, int>{5, 2});  // Debian bookworm's HIP 5.2.3
    CHECK(hip_version(60342134) == std::pair<int, int>{6, 3});
    CHECK(hip_version(50500000) == std::pair<int, int>{5, 5});
  }

  TEST_CASE("gcnArchName is found in a device-properties buffer of any layout") {
    std::vector<unsigned char> props(4096, 0);
    std::strcpy(reinterpret_cast<char*>(props.data()), "AMD Radeon RX 7900 XTX");
    props[300] = 'g';  // a stray 'g' in binary fields is not a match
    std::strcpy(reinterpret_cast<char*>(props.data()) + 1160, "gfx1100:sramecc-:xnack-");
    CHECK(gcn_arch_name_in_properties(props) == "gfx1100:sramecc-:xnack-");
    CHECK(amd_arch_base_name(gcn_arch_name_in_properties(props)) == "gfx1100");
    std::vector<unsigned char> none(512, 0);
    CHECK(gcn_arch_name_in_properties(none).empty());
  }
}
