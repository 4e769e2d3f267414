// The few HIP runtime declarations ugrad needs, written out so no ROCm headers are required: HIP is
// loaded with dlopen at run time (hip_api.h) and never linked.
//
// Layout-safety: hipDeviceProp_t is large and changed layout between ROCm 5 and 6
// (hipDeviceProp_tR0600), so we never declare it. Properties come from hipDeviceGetAttribute
// (enum numbering stable since ROCm 5.0, values below) and hipDeviceGetName; the architecture
// name (gcnArchName) is found by calling the exported hipGetDeviceProperties into an oversized
// zeroed buffer and scanning it for the "gfx..." string, which works for either layout.
#pragma once
#include <cstddef>

namespace ugrad::hip {

using hipError_t = int;
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorNoDevice = 100;
constexpr hipError_t hipErrorInvalidDevice = 101;

using hipDevice_t = int;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipStream_t = struct ihipStream_t*;
using hipEvent_t = struct ihipEvent_t*;

enum hipMemcpyKind : int {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
};

// hipDeviceAttribute_t values (ROCm >= 5.0 numbering).
enum hipDeviceAttribute_t : int {
  hipDeviceAttributeMaxThreadsPerBlock = 56,
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
  hipDeviceAttributeWarpSize = 87,
};

// hipModuleLaunchKernel `extra` markers (hip_runtime_api.h, AMD platform).
inline void* const HIP_LAUNCH_PARAM_BUFFER_POINTER = reinterpret_cast<void*>(0x01);
inline void* const HIP_LAUNCH_PARAM_BUFFER_SIZE = reinterpret_cast<void*>(0x02);
inline void* const HIP_LAUNCH_PARAM_END = reinterpret_cast<void*>(0x03);

// Big enough for every hipDeviceProp_t layout (R0000 is ~1.2 KiB, R0600 ~1.5 KiB).
constexpr size_t kDevicePropBufferSize = 16 * 1024;

// X(name, return type, parameter list): the function table hip_api.h loads.
#define UGRAD_FOR_EACH_HIP_FUNCTION(X)                                                           \
  X(hipInit, hipError_t, (unsigned flags))                                                       \
  X(hipGetDeviceCount, hipError_t, (int* count))                                                 \
  X(hipSetDevice, hipError_t, (int device))                                                      \
  X(hipDriverGetVersion, hipError_t, (int* version))                                             \
  X(hipDeviceGetName, hipError_t, (char* name, int len, hipDevice_t device))                     \
  X(hipDeviceGetAttribute, hipError_t, (int* value, hipDeviceAttribute_t attr, int device))      \
  X(hipGetDeviceProperties, hipError_t, (void* props, int device))                               \
  X(hipDeviceTotalMem, hipError_t, (size_t * bytes, hipDevice_t device))                         \
  X(hipMalloc, hipError_t, (void** ptr, size_t size))                                            \
  X(hipFree, hipError_t, (void* ptr))                                                            \
  X(hipMemcpy, hipError_t, (void* dst, const void* src, size_t size, hipMemcpyKind kind))        \
  X(hipMemcpyAsync, hipError_t,                                                                  \
    (void* dst, const void* src, size_t size, hipMemcpyKind kind, hipStream_t stream))           \
  X(hipModuleLoadData, hipError_t, (hipModule_t * module, const void* image))                    \
  X(hipModuleUnload, hipError_t, (hipModule_t module))                                           \
  X(hipModuleGetFunction, hipError_t, (hipFunction_t * f, hipModule_t module, const char* name)) \
  X(hipModuleLaunchKernel, hipError_t,                                                           \
    (hipFunction_t f, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,       \
     unsigned block_y, unsigned block_z, unsigned shared_bytes, hipStream_t stream,              \
     void** kernel_params, void** extra))                                                        \
  X(hipStreamCreate, hipError_t, (hipStream_t * stream))                                         \
  X(hipStreamDestroy, hipError_t, (hipStream_t stream))                                          \
  X(hipStreamSynchronize, hipError_t, (hipStream_t stream))                                      \
  X(hipEventCreate, hipError_t, (hipEvent_t * event))                                            \
  X(hipEventDestroy, hipError_t, (hipEvent_t event))                                             \
  X(hipEventRecord, hipError_t, (hipEvent_t event, hipStream_t stream))                          \
  X(hipEventSynchronize, hipError_t, (hipEvent_t event))                                         \
  X(hipEventElapsedTime, hipError_t, (float* ms, hipEvent_t start, hipEvent_t stop))             \
  X(hipDeviceSynchronize, hipError_t, ())                                                        \
  X(hipGetErrorName, const char*, (hipError_t error))                                            \
  X(hipGetErrorString, const char*, (hipError_t error))

}  // namespace ugrad::hip
