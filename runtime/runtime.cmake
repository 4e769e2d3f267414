# The realize engine, the device registry and the devices (CPU, NULL, runtime/amd/).
ugrad_component(ugrad_runtime
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/device.cpp ${CMAKE_CURRENT_LIST_DIR}/cpu_device.cpp
    ${CMAKE_CURRENT_LIST_DIR}/null_device.cpp ${CMAKE_CURRENT_LIST_DIR}/realize.cpp
    ${CMAKE_CURRENT_LIST_DIR}/jit.cpp ${CMAKE_CURRENT_LIST_DIR}/launch_dims.cpp
    ${CMAKE_CURRENT_LIST_DIR}/kernel_memo.cpp
    ${CMAKE_CURRENT_LIST_DIR}/device_features.cpp
    ${CMAKE_CURRENT_LIST_DIR}/amd/amd_program.cpp ${CMAKE_CURRENT_LIST_DIR}/amd/null_amd_device.cpp
    ${CMAKE_CURRENT_LIST_DIR}/amd/amd_device.cpp
  DEPS ugrad_schedule ugrad_memory_plan ugrad_codegen ugrad_llvm_backend ugrad_runtime_core)
