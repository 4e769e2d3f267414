# Emulated gfx1100 wave-instructions per second (test/mockgpu), vs the same work natively.
if(UGRAD_BUILD_TESTS)
  ugrad_bench(bench_emulator SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_emulator.cpp
    DEPS mockgpu_emu ugrad_llvm_backend)
endif()
