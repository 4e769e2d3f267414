// The HIP loader without a GPU: a missing library, Debian's libamdhip64.so.5 with no device, and
// the layout-independent architecture name scan.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_compile.h"
#include "runtime/amd/amd_kernargs.h"
#include "runtime/amd/hip_api.h"
#include "runtime/amd/hip_device.h"
#include "test/runtime/test_llvm_kernels.h"

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
    // access(), not a dlopen probe: unloading HIP again would leak its static initializers' memory.
    if (access(kDebianHip, R_OK) != 0) {
      MESSAGE("skipped: " << kDebianHip << " is not installed");
      return;
    }
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

  TEST_CASE("launch sequence against a fake HIP library") {
    ScopedKnob lib(Knob::HIP_LIB, UGRAD_FAKE_HIP_LIB);
    auto device = HipDevice::open();
    CHECK(device->info().name == "Fake Radeon RX 7900 XTX");
    CHECK(device->info().gcn_arch_name == "gfx1100");
    CHECK(device->info().compute_units == 96);
    CHECK(device->info().warp_size == 32);
    CHECK(device->target().arch == "gfx1100");

    // Memory round trip (the fake's device memory is host memory).
    std::vector<float> host = {1, 2, 3, 4}, back(4);
    void* a = device->allocate(host.size() * sizeof(float));
    void* out = device->allocate(host.size() * sizeof(float));
    device->copy_to_device(a, host.data(), host.size() * sizeof(float));
    device->copy_to_host(back.data(), a, back.size() * sizeof(float));
    CHECK(back == host);

    // Compile for the device's target, load, pack and launch on a stream between two events.
    AmdBinary bin = amd_compile(device->target(), test_kernels::kAmdScale, "E_scale");
    auto module = device->load_module(bin.code_object);
    hip::hipFunction_t f = module->function("E_scale");
    const AmdKernelInfo& k = bin.info.kernel("E_scale");
    std::vector<uint64_t> buffers = {reinterpret_cast<uint64_t>(out),
                                     reinterpret_cast<uint64_t>(a)};
    std::vector<uint64_t> scalars = {static_cast<uint64_t>(int64_t{-2}), 4};
    std::vector<uint8_t> kernargs = pack_kernargs(k, buffers, scalars);
    auto stream = device->create_stream();
    auto start = device->create_event(), stop = device->create_event();
    start->record(stream.get());
    device->launch(f, {4, 1, 1}, {256, 1, 1}, kernargs, stream.get());
    stop->record(stream.get());
    stop->synchronize();
    stream->synchronize();
    CHECK(HipEvent::elapsed_ms(*start, *stop) == doctest::Approx(1.25));

    void* fake = dlopen(UGRAD_FAKE_HIP_LIB, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(fake != nullptr);
    auto last_kernel = reinterpret_cast<const char* (*)()>(dlsym(fake, "fake_hip_last_kernel"));
    auto last_grid = reinterpret_cast<const unsigned* (*)()>(dlsym(fake, "fake_hip_last_grid"));
    auto last_block = reinterpret_cast<const unsigned* (*)()>(dlsym(fake, "fake_hip_last_block"));
    auto last_args =
        reinterpret_cast<const unsigned char* (*)(size_t*)>(dlsym(fake, "fake_hip_last_kernargs"));
    CHECK(std::string(last_kernel()) == "E_scale");
    CHECK(last_grid()[0] == 4);
    CHECK(last_grid()[1] == 1);
    CHECK(last_block()[0] == 256);
    size_t size = 0;
    const unsigned char* seen = last_args(&size);
    REQUIRE(size == k.kernarg_size);
    CHECK(std::vector<uint8_t>(seen, seen + size) == kernargs);
    uint64_t out_seen;
    std::memcpy(&out_seen, seen + k.explicit_args()[0]->offset, 8);
    CHECK(out_seen == reinterpret_cast<uint64_t>(out));
    int32_t k_seen;
    std::memcpy(&k_seen, seen + k.explicit_args()[2]->offset, 4);
    CHECK(k_seen == -2);
    dlclose(fake);

    // HIP failures are Errors naming the call, the code and its name.
    std::string oom = error_of([&] { device->allocate(size_t{2} << 40); });
    CHECK(oom.find("hipMalloc") != std::string::npos);
    CHECK(oom.find("hipErrorOutOfMemory (2)") != std::string::npos);
    CHECK(error_of([&] { module->function("missing_kernel"); }).find("missing_kernel") !=
          std::string::npos);
    CHECK_THROWS_AS(device->launch(f, {0, 1, 1}, {256, 1, 1}, kernargs), Error);
    device->release(a);
    device->release(out);
  }
}
