ugrad_test(test_llvm_backend
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_llvm_cpu.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_amd_code_object.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_hip_loader.cpp
  DEPS ugrad_llvm_backend ugrad_codegen)

# A fake libamdhip64 (one gfx1100 device on host memory, launches recorded) for the loader tests.
add_library(ugrad_fake_hip SHARED ${CMAKE_CURRENT_LIST_DIR}/test_hip_fake_lib.cpp)
target_include_directories(ugrad_fake_hip PRIVATE ${PROJECT_SOURCE_DIR})
add_dependencies(test_llvm_backend ugrad_fake_hip)
target_compile_definitions(test_llvm_backend PRIVATE
  UGRAD_FAKE_HIP_LIB="$<TARGET_FILE:ugrad_fake_hip>")
