// A stand-in for libamdhip64.so that the HIP loader tests dlopen through HIP_LIB: one fake gfx1100
// device whose memory is host memory, and a launch that records what it was given (kernel name,
// grid, block, stream, the HIP_LAUNCH_PARAM_* array and a copy of the kernarg bytes).
// Test infrastructure only; it checks the calling conventions, not the GPU.
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "runtime/amd/hip_min.h"

using namespace ugrad::hip;

namespace {
struct FakeModule {
  std::vector<unsigned char> image;
};
struct FakeFunction {
  std::string name;
};
struct Launch {
  std::string kernel;
  unsigned grid[3], block[3], shared_bytes;
  void* stream;
  std::vector<unsigned char> kernargs;
  bool had_extra;
  int count = 0;
} g_last;
std::deque<FakeFunction> g_functions;  // stable addresses, freed at exit
constexpr hipError_t kInvalidValue = 1, kOutOfMemory = 2, kNotFound = 500;
}  // namespace

extern "C" {

// Test hooks (not part of HIP).
const char* fake_hip_last_kernel() { return g_last.kernel.c_str(); }
const unsigned* fake_hip_last_grid() { return g_last.grid; }
const unsigned* fake_hip_last_block() { return g_last.block; }
const unsigned char* fake_hip_last_kernargs(size_t* size) {
  *size = g_last.kernargs.size();
  return g_last.kernargs.data();
}
int fake_hip_launch_count() { return g_last.count; }

hipError_t hipInit(unsigned) { return hipSuccess; }
hipError_t hipGetDeviceCount(int* count) {
  *count = 1;
  return hipSuccess;
}
hipError_t hipSetDevice(int device) { return device == 0 ? hipSuccess : hipErrorInvalidDevice; }
hipError_t hipDriverGetVersion(int* v) {
  *v = 60342134;  // HIP 6.3
  return hipSuccess;
}
hipError_t hipDeviceGetName(char* name, int len, hipDevice_t) {
  std::strncpy(name, "Fake Radeon RX 7900 XTX", len);
  return hipSuccess;
}
hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t attr, int) {
  switch (attr) {
    case hipDeviceAttributeMaxThreadsPerBlock:
      *v = 1024;
      return hipSuccess;
    case hipDeviceAttributeMultiprocessorCount:
      *v = 96;
      return hipSuccess;
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
      *v = 65536;
      return hipSuccess;
    case hipDeviceAttributeWarpSize:
      *v = 32;
      return hipSuccess;
  }
  return kInvalidValue;
}
hipError_t hipGetDeviceProperties(void* props, int) {
  // Name first, gcnArchName far in, as in either real layout.
  std::strcpy(static_cast<char*>(props), "Fake Radeon RX 7900 XTX");
  std::strcpy(static_cast<char*>(props) + 1160, "gfx1100:sramecc-:xnack-");
  return hipSuccess;
}
hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t) {
  *bytes = size_t{24} << 30;
  return hipSuccess;
}
hipError_t hipMalloc(void** p, size_t size) {
  if (size > (size_t{1} << 40)) return kOutOfMemory;
  *p = std::malloc(size ? size : 1);
  return hipSuccess;
}
hipError_t hipFree(void* p) {
  std::free(p);
  return hipSuccess;
}
hipError_t hipMemcpy(void* dst, const void* src, size_t size, hipMemcpyKind) {
  std::memcpy(dst, src, size);
  return hipSuccess;
}
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size, hipMemcpyKind kind,
                          hipStream_t) {
  return hipMemcpy(dst, src, size, kind);
}
hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  const auto* bytes = static_cast<const unsigned char*>(image);
  if (std::memcmp(bytes,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return kInvalidValue;
  *module = reinterpret_cast<hipModule_t>(new FakeModule{{bytes, bytes + 64}});
  return hipSuccess;
}
hipError_t hipModuleUnload(hipModule_t module) {
  delete reinterpret_cast<FakeModule*>(module);
  return hipSuccess;
}
hipError_t hipModuleGetFunction(hipFunction_t* f, hipModule_t, const char* name) {
  if (std::strncmp(name, "missing", 7) == 0) return kNotFound;
  g_functions.push_back(FakeFunction{name});
  *f = reinterpret_cast<hipFunction_t>(&g_functions.back());
  return hipSuccess;
}
hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                 hipStream_t stream, void** params, void** extra) {
  if (params) return kInvalidValue;
  g_last.kernel = reinterpret_cast<FakeFunction*>(f)->name;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  std::memcpy(g_last.grid, grid, sizeof grid);
  std::memcpy(g_last.block, block, sizeof block);
  g_last.shared_bytes = shared_bytes;
  g_last.stream = stream;
  g_last.had_extra = extra != nullptr;
  g_last.kernargs.clear();
  if (extra) {
    // The layout HIP's launch path checks: {BUFFER_POINTER, buf, BUFFER_SIZE, &size, END}.
    if (extra[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || extra[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE ||
        extra[4] != HIP_LAUNCH_PARAM_END)
      return kInvalidValue;
    const auto* buf = static_cast<const unsigned char*>(extra[1]);
    size_t size = *static_cast<const size_t*>(extra[3]);
    g_last.kernargs.assign(buf, buf + size);
  }
  ++g_last.count;
  return hipSuccess;
}
hipError_t hipStreamCreate(hipStream_t* s) {
  *s = reinterpret_cast<hipStream_t>(new int(7));
  return hipSuccess;
}
hipError_t hipStreamDestroy(hipStream_t s) {
  delete reinterpret_cast<int*>(s);
  return hipSuccess;
}
hipError_t hipStreamSynchronize(hipStream_t) { return hipSuccess; }
hipError_t hipEventCreate(hipEvent_t* e) {
  *e = reinterpret_cast<hipEvent_t>(new double(0));
  return hipSuccess;
}
hipError_t hipEventDestroy(hipEvent_t e) {
  delete reinterpret_cast<double*>(e);
  return hipSuccess;
}
hipError_t hipEventRecord(hipEvent_t e, hipStream_t) {
  static double clock_ms = 0;
  *reinterpret_cast<double*>(e) = (clock_ms += 1.25);
  return hipSuccess;
}
hipError_t hipEventSynchronize(hipEvent_t) { return hipSuccess; }
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  *ms = static_cast<float>(*reinterpret_cast<double*>(stop) - *reinterpret_cast<double*>(start));
  return hipSuccess;
}
hipError_t hipDeviceSynchronize() { return hipSuccess; }
const char* hipGetErrorName(hipError_t e) {
  switch (e) {
    case hipSuccess:
      return "hipSuccess";
    case kInvalidValue:
      return "hipErrorInvalidValue";
    case kOutOfMemory:
      return "hipErrorOutOfMemory";
    case kNotFound:
      return "hipErrorNotFound";
    default:
      return "hipErrorUnknown";
  }
}
const char* hipGetErrorString(hipError_t e) { return e == kOutOfMemory ? "out of memory" : "fake"; }

}  // extern "C"
