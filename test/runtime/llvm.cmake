ugrad_test(test_llvm_backend
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_llvm_cpu.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_amd_code_object.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_amd_msgpack.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_hip_loader.cpp
  DEPS ugrad_llvm_backend)
