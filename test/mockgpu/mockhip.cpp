// libmockhip.so: the HIP runtime API that ugrad dlopens (runtime/amd/hip_min.h's function table),
// backed by the gfx1100 emulator. One device (gfx1100, wave32); device pointers are host
// pointers into allocations this library owns; streams execute synchronously in order; events
// are host timestamps. Emulator errors become hipErrorLaunchFailure, and hipGetErrorString of
// that code returns the emulator's message (kernel, pc, instruction). Thread-safe (one lock).
// Knobs MOCKGPU_POISON/SEED/SAMPLE set the launch options (launch.h); every launch leaves a
// record of its counters (mockhip_launch_record, read through launch_records.h); DEBUG>=2 prints
// each launch's modeled time (cost_model.h).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/env.h"
#include "base/error.h"
#include "runtime/amd/amd_code_object.h"
#include "runtime/amd/hip_min.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch.h"

using namespace ugrad::hip;
namespace mg = ugrad::mockgpu;

struct ugrad::hip::ihipModuleSymbol_t {
  ihipModule_t* module;
  const ugrad::AmdKernelInfo* kernel;
};
struct ugrad::hip::ihipModule_t {
  std::vector<uint8_t> image;
  ugrad::AmdCodeObject info;
  mg::Program program;
  std::vector<std::unique_ptr<ihipModuleSymbol_t>> functions;  // one per kernel, made on demand
};
struct ugrad::hip::ihipStream_t {};
struct ugrad::hip::ihipEvent_t {
  std::chrono::steady_clock::time_point when{};
  bool recorded = false;
};

namespace {

constexpr hipError_t kInvalidValue = 1, kOutOfMemory = 2, kInvalidImage = 200, kInvalidHandle = 400,
                     kNotFound = 500, kNotReady = 600, kLaunchFailure = 719;

struct State {
  std::mutex mutex;
  mg::MemoryMap memory;
  std::unordered_map<void*, size_t> allocations;
  int device = 0;
  std::string last_message;               // the most recent failure's details
  std::vector<mg::LaunchRecord> records;  // one per successful launch, oldest first
  mg::SharedCaches caches;                // since the records were last cleared
};

State& state() {
  static State* s = new State;  // never destroyed: usable from other libraries' destructors
  return *s;
}

hipError_t failed(hipError_t code, std::string message) {
  state().last_message = std::move(message);
  return code;
}

// A device range [p, p+n) must lie inside one live allocation.
bool device_range_ok(const void* p, size_t n) {
  return n == 0 || state().memory.valid(reinterpret_cast<uint64_t>(p), n);
}

// The size of an ELF64 image from its headers (hipModuleLoadData gets no length).
size_t elf_image_size(const uint8_t* image) {
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      image[4] != 2)
    return 0;
  uint64_t phoff, shoff;
  uint16_t phentsize, phnum, shentsize, shnum;
  std::memcpy(&phoff, image + 0x20, 8);
  std::memcpy(&shoff, image + 0x28, 8);
  std::memcpy(&phentsize, image + 0x36, 2);
  std::memcpy(&phnum, image + 0x38, 2);
  std::memcpy(&shentsize, image + 0x3a, 2);
  std::memcpy(&shnum, image + 0x3c, 2);
  uint64_t end = std::max<uint64_t>(64, shoff + uint64_t{shnum} * shentsize);
  end = std::max(end, phoff + uint64_t{phnum} * phentsize);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint8_t* sh = image + shoff + uint64_t{i} * shentsize;
    uint32_t type;
    uint64_t off, size;
    std::memcpy(&type, sh + 4, 4);
    std::memcpy(&off, sh + 0x18, 8);
    std::memcpy(&size, sh + 0x20, 8);
    if (type != 8 /* SHT_NOBITS */) end = std::max(end, off + size);
  }
  return end > (1u << 30) ? 0 : end;
}

// The launch options from the knobs (read at every launch, so a test may change them).
mg::LaunchOptions launch_options() {
  using ugrad::Knob, ugrad::knob_int;
  mg::LaunchOptions o;
  o.poison = knob_int(Knob::MOCKGPU_POISON) != 0;
  o.seed = static_cast<uint64_t>(knob_int(Knob::MOCKGPU_SEED));
  const int64_t every = knob_int(Knob::MOCKGPU_SAMPLE);
  if (every < 1 || every > UINT32_MAX) ugrad::fail("MOCKGPU_SAMPLE={} is not in 1..2^32-1", every);
  o.sample_every = static_cast<uint32_t>(every);
  return o;
}

void put(std::vector<uint8_t>& buf, uint32_t offset, uint64_t value, uint32_t size) {
  if (offset + size <= buf.size()) std::memcpy(buf.data() + offset, &value, size);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) hipError_t hipInit(unsigned) { return hipSuccess; }

__attribute__((visibility("default"))) hipError_t hipGetDeviceCount(int* count) {
  if (!count) return kInvalidValue;
  *count = 1;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipSetDevice(int device) {
  return device == 0 ? hipSuccess : hipErrorInvalidDevice;
}

__attribute__((visibility("default"))) hipError_t hipDriverGetVersion(int* version) {
  if (!version) return kInvalidValue;
  *version = 60000000;  // reports HIP 6.0
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipDeviceGetName(char* name, int len,
                                                                   hipDevice_t device) {
  if (device != 0) return hipErrorInvalidDevice;
  if (!name || len <= 0) return kInvalidValue;
  std::snprintf(name, static_cast<size_t>(len), "%s", "AMD Radeon RX 7900 XTX (ugrad mockgpu)");
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipDeviceGetAttribute(int* value,
                                                                        hipDeviceAttribute_t attr,
                                                                        int device) {
  if (device != 0) return hipErrorInvalidDevice;
  if (!value) return kInvalidValue;
  switch (attr) {
    case hipDeviceAttributeMaxThreadsPerBlock:
      *value = 1024;
      return hipSuccess;
    case hipDeviceAttributeMultiprocessorCount:
      *value = 48;
      return hipSuccess;
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
      *value = 65536;
      return hipSuccess;
    case hipDeviceAttributeWarpSize:
      *value = 32;
      return hipSuccess;
  }
  return failed(kInvalidValue, fmt::format("mockhip: device attribute {} is not modelled",
                                           static_cast<int>(attr)));
}

// Fills the fields of hipDeviceProp_t that callers read by name scan: name at offset 0 and
// gcnArchName inside the first 1 KiB (both layouts are larger than that).
__attribute__((visibility("default"))) hipError_t hipGetDeviceProperties(void* props, int device) {
  if (device != 0) return hipErrorInvalidDevice;
  if (!props) return kInvalidValue;
  auto* p = static_cast<char*>(props);
  std::memset(p, 0, 1024);
  std::snprintf(p, 256, "%s", "AMD Radeon RX 7900 XTX (ugrad mockgpu)");
  std::snprintf(p + 512, 256, "%s", "gfx1100");
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipDeviceTotalMem(size_t* bytes,
                                                                    hipDevice_t device) {
  if (device != 0) return hipErrorInvalidDevice;
  if (!bytes) return kInvalidValue;
  *bytes = size_t{24} << 30;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipMalloc(void** ptr, size_t size) {
  if (!ptr) return kInvalidValue;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const size_t rounded = (std::max<size_t>(size, 1) + 255) / 256 * 256;
  bool poison;
  try {
    poison = ugrad::knob_int(ugrad::Knob::MOCKGPU_POISON) != 0;
  } catch (const std::exception& e) {
    return failed(kInvalidValue, e.what());
  }
  void* p = std::aligned_alloc(256, rounded);
  if (!p) return failed(kOutOfMemory, fmt::format("mockhip: cannot allocate {} bytes", size));
  if (poison)
    mg::fill_poison(p, rounded);
  else
    std::memset(p, 0, rounded);
  s.allocations[p] = size;
  s.memory.add(reinterpret_cast<uint64_t>(p), std::max<size_t>(size, 1));
  *ptr = p;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipFree(void* ptr) {
  if (!ptr) return hipSuccess;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end())
    return failed(kInvalidValue, fmt::format("mockhip: hipFree of unknown pointer {}", ptr));
  s.memory.remove(reinterpret_cast<uint64_t>(ptr));
  s.caches.forget(reinterpret_cast<uint64_t>(ptr));
  s.allocations.erase(it);
  std::free(ptr);
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipMemcpy(void* dst, const void* src, size_t size,
                                                            hipMemcpyKind kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (size == 0) return hipSuccess;
  if (!dst || !src) return kInvalidValue;
  const bool dst_dev = kind == hipMemcpyHostToDevice || kind == hipMemcpyDeviceToDevice;
  const bool src_dev = kind == hipMemcpyDeviceToHost || kind == hipMemcpyDeviceToDevice;
  if ((dst_dev && !device_range_ok(dst, size)) || (src_dev && !device_range_ok(src, size)))
    return failed(kInvalidValue,
                  fmt::format("mockhip: hipMemcpy of {} bytes outside a device allocation", size));
  std::memmove(dst, src, size);
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipMemcpyAsync(void* dst, const void* src,
                                                                 size_t size, hipMemcpyKind kind,
                                                                 hipStream_t) {
  return hipMemcpy(dst, src, size, kind);
}

__attribute__((visibility("default"))) hipError_t hipModuleLoadData(hipModule_t* module,
                                                                    const void* image) {
  if (!module || !image) return kInvalidValue;
  const auto* bytes = static_cast<const uint8_t*>(image);
  const size_t size = elf_image_size(bytes);
  if (size == 0) return failed(kInvalidImage, "mockhip: image is not an ELF64 code object");
  auto m = std::make_unique<ihipModule_t>();
  try {
    m->image.assign(bytes, bytes + size);
    m->info = ugrad::parse_amd_code_object(m->image, "mockhip module");
    if (m->info.arch != "gfx1100")
      return failed(kInvalidImage, fmt::format("mockhip: code object is for {}, the emulated "
                                               "device is gfx1100",
                                               m->info.arch));
    m->program = mg::build_program(m->image.data() + m->info.text_offset, m->info.text_size,
                                   m->info.text_address);
  } catch (const std::exception& e) {
    return failed(kInvalidImage, e.what());
  }
  *module = m.release();
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipModuleUnload(hipModule_t module) {
  delete module;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipModuleGetFunction(hipFunction_t* f,
                                                                       hipModule_t module,
                                                                       const char* name) {
  if (!f || !module || !name) return kInvalidValue;
  for (const ugrad::AmdKernelInfo& k : module->info.kernels) {
    if (k.name != name) continue;
    for (const auto& fn : module->functions) {
      if (fn->kernel == &k) {
        *f = fn.get();
        return hipSuccess;
      }
    }
    module->functions.push_back(
        std::make_unique<ihipModuleSymbol_t>(ihipModuleSymbol_t{module, &k}));
    *f = module->functions.back().get();
    return hipSuccess;
  }
  return failed(kNotFound, fmt::format("mockhip: no kernel named {} in the module", name));
}

__attribute__((visibility("default"))) hipError_t hipModuleLaunchKernel(
    hipFunction_t f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
    unsigned block_y, unsigned block_z, unsigned shared_bytes, hipStream_t, void** kernel_params,
    void** extra) {
  if (!f) return kInvalidHandle;
  const ugrad::AmdKernelInfo& k = *f->kernel;
  if (!grid_x || !grid_y || !grid_z || !block_x || !block_y || !block_z)
    return failed(kInvalidValue, fmt::format("mockhip: {}: empty grid or block", k.name));
  // Kernarg segment: the explicit args from the caller's buffer (or kernel_params), then the
  // hidden args the code object keeps, as the HIP runtime fills them.
  std::vector<uint8_t> kernarg(std::max<uint32_t>(k.descriptor.kernarg_size, k.kernarg_size) + 64,
                               0);
  if (extra) {
    const void* buf = nullptr;
    size_t size = 0;
    for (int i = 0; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER)
        buf = extra[i + 1];
      else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE)
        size = *static_cast<size_t*>(extra[i + 1]);
      else
        return failed(kInvalidValue, "mockhip: unknown hipModuleLaunchKernel extra key");
    }
    if (size > kernarg.size() || (size && !buf))
      return failed(kInvalidValue, fmt::format("mockhip: {}: kernarg buffer of {} bytes, kernel "
                                               "takes {}",
                                               k.name, size, k.kernarg_size));
    if (size) std::memcpy(kernarg.data(), buf, size);
  } else if (kernel_params) {
    size_t i = 0;
    for (const ugrad::AmdKernelArg* a : k.explicit_args())
      std::memcpy(kernarg.data() + a->offset, kernel_params[i++], a->size);
  }
  const unsigned block[3] = {block_x, block_y, block_z};
  const unsigned grid[3] = {grid_x, grid_y, grid_z};
  using K = ugrad::AmdArgKind;
  for (const ugrad::AmdKernelArg& a : k.args) {
    int dim = -1;
    switch (a.kind) {
      case K::HiddenBlockCountX:
      case K::HiddenBlockCountY:
      case K::HiddenBlockCountZ:
        dim = static_cast<int>(a.kind) - static_cast<int>(K::HiddenBlockCountX);
        put(kernarg, a.offset, grid[dim], 4);
        break;
      case K::HiddenGroupSizeX:
      case K::HiddenGroupSizeY:
      case K::HiddenGroupSizeZ:
        dim = static_cast<int>(a.kind) - static_cast<int>(K::HiddenGroupSizeX);
        put(kernarg, a.offset, block[dim], 2);
        break;
      case K::HiddenRemainderX:
      case K::HiddenRemainderY:
      case K::HiddenRemainderZ:
        put(kernarg, a.offset, 0, 2);  // grids are whole workgroups here
        break;
      default:
        break;
    }
  }
  mg::DispatchPacket packet{};
  packet.setup = 3;
  packet.workgroup_size_x = static_cast<uint16_t>(block_x);
  packet.workgroup_size_y = static_cast<uint16_t>(block_y);
  packet.workgroup_size_z = static_cast<uint16_t>(block_z);
  packet.grid_size_x = grid_x * block_x;
  packet.grid_size_y = grid_y * block_y;
  packet.grid_size_z = grid_z * block_z;
  packet.private_segment_size = k.descriptor.private_segment_fixed_size;
  packet.group_segment_size = k.descriptor.group_segment_fixed_size + shared_bytes;
  packet.kernarg_address = reinterpret_cast<uint64_t>(kernarg.data());

  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  mg::LaunchParams p;
  p.kernel = k.name;
  p.program = &f->module->program;
  p.entry =
      static_cast<uint32_t>(k.descriptor_address + k.descriptor.kernel_code_entry_byte_offset -
                            f->module->info.text_address);
  p.descriptor = {k.descriptor.group_segment_fixed_size,
                  k.descriptor.private_segment_fixed_size,
                  k.descriptor.kernarg_size,
                  k.descriptor.compute_pgm_rsrc1,
                  k.descriptor.compute_pgm_rsrc2,
                  k.descriptor.kernel_code_properties};
  for (int d = 0; d < 3; ++d) {
    p.grid[d] = grid[d];
    p.block[d] = block[d];
  }
  p.dynamic_lds = shared_bytes;
  p.kernarg = reinterpret_cast<uint64_t>(kernarg.data());
  p.dispatch_packet = reinterpret_cast<uint64_t>(&packet);
  p.sgprs = k.sgpr_count;
  s.memory.add(p.kernarg, kernarg.size());
  s.memory.add(p.dispatch_packet, sizeof(packet));
  hipError_t result = hipSuccess;
  try {
    mg::LaunchRecord record;
    std::vector<mg::Footprint> touched;
    record.counters = mg::launch_kernel(p, s.memory, launch_options(), &touched);
    s.caches.account(touched, record.counters.scale(), record.counters);
    std::snprintf(record.kernel, sizeof(record.kernel), "%s", k.name.c_str());
    s.records.push_back(record);
    if (ugrad::knob_int(ugrad::Knob::DEBUG) >= 2)
      std::fprintf(
          stderr, "%s\n",
          mg::describe_launch(k.name, record.counters, mg::model_launch(record.counters)).c_str());
  } catch (const std::exception& e) {
    result = failed(kLaunchFailure, e.what());
  }
  s.memory.remove(p.kernarg);
  s.memory.remove(p.dispatch_packet);
  return result;
}

__attribute__((visibility("default"))) hipError_t hipStreamCreate(hipStream_t* stream) {
  if (!stream) return kInvalidValue;
  *stream = new ihipStream_t;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipStreamDestroy(hipStream_t stream) {
  delete stream;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipStreamSynchronize(hipStream_t) {
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipEventCreate(hipEvent_t* event) {
  if (!event) return kInvalidValue;
  *event = new ihipEvent_t;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipEventDestroy(hipEvent_t event) {
  delete event;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipEventRecord(hipEvent_t event, hipStream_t) {
  if (!event) return kInvalidHandle;
  event->when = std::chrono::steady_clock::now();
  event->recorded = true;
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipEventSynchronize(hipEvent_t event) {
  return event ? hipSuccess : kInvalidHandle;
}

__attribute__((visibility("default"))) hipError_t hipEventElapsedTime(float* ms, hipEvent_t start,
                                                                      hipEvent_t stop) {
  if (!ms || !start || !stop) return kInvalidValue;
  if (!start->recorded || !stop->recorded) return kNotReady;
  *ms = std::chrono::duration<float, std::milli>(stop->when - start->when).count();
  return hipSuccess;
}

__attribute__((visibility("default"))) hipError_t hipDeviceSynchronize() { return hipSuccess; }

__attribute__((visibility("default"))) const char* hipGetErrorName(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return "hipSuccess";
    case kInvalidValue:
      return "hipErrorInvalidValue";
    case kOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorNoDevice:
      return "hipErrorNoDevice";
    case hipErrorInvalidDevice:
      return "hipErrorInvalidDevice";
    case kInvalidImage:
      return "hipErrorInvalidImage";
    case kInvalidHandle:
      return "hipErrorInvalidHandle";
    case kNotFound:
      return "hipErrorNotFound";
    case kNotReady:
      return "hipErrorNotReady";
    case kLaunchFailure:
      return "hipErrorLaunchFailure";
  }
  return "hipErrorUnknown";
}

// The description of the most recent failure with details (emulator message), else a generic one.
__attribute__((visibility("default"))) const char* hipGetErrorString(hipError_t error) {
  if (error == hipSuccess) return "no error";
  const std::string& m = state().last_message;
  return m.empty() ? hipGetErrorName(error) : m.c_str();
}

// ---- mockhip extras (not HIP): for tests and benchmarks ----

/// Launches recorded so far (see launch_records.h).
__attribute__((visibility("default"))) size_t mockhip_launch_count() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.records.size();
}

/// Copies record i (oldest first) to *out; false when there is no record i.
__attribute__((visibility("default"))) bool mockhip_launch_record(size_t i, mg::LaunchRecord* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!out || i >= s.records.size()) return false;
  *out = s.records[i];
  return true;
}

/// Forgets the recorded launches, and what the caches hold: the next launch starts a step whose
/// caches are cold (docs/rdna3.md, "Cost model").
__attribute__((visibility("default"))) void mockhip_clear_launch_records() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.records.clear();
  s.caches.clear();
}

}  // extern "C"
