# Modeled RX 7900 XTX speed of the models' generic kernels, run as gfx1100 code on the emulator
# (test/mockgpu) and timed by its cost model; not run in CI (minutes of emulation).
if(UGRAD_BUILD_TESTS)
  find_package(nlohmann_json 3 REQUIRED)  # --json
  ugrad_bench(bench_amd_modeled SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_amd_modeled.cpp
    DEPS ugrad_llm mockgpu_emu nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})
  add_dependencies(bench_amd_modeled mockhip)
  target_compile_definitions(bench_amd_modeled PRIVATE UGRAD_MOCKHIP_LIB="$<TARGET_FILE:mockhip>")
endif()

# The same for the hand-written quantized-linear decode kernel, per format and Qwen shape.
if(UGRAD_BUILD_TESTS)
  ugrad_bench(bench_linear_amd_modeled SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_linear_amd_modeled.cpp
    DEPS ugrad_llm mockgpu_emu ${CMAKE_DL_LIBS})
  add_dependencies(bench_linear_amd_modeled mockhip)
  target_compile_definitions(bench_linear_amd_modeled PRIVATE
    UGRAD_MOCKHIP_LIB="$<TARGET_FILE:mockhip>")
endif()

# The same for decode attention: the flash-decode kernels and the generic path.
if(UGRAD_BUILD_TESTS)
  ugrad_bench(bench_attention_amd_modeled
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_attention_amd_modeled.cpp
    DEPS ugrad_llm mockgpu_emu ${CMAKE_DL_LIBS})
  add_dependencies(bench_attention_amd_modeled mockhip)
  target_compile_definitions(bench_attention_amd_modeled PRIVATE
    UGRAD_MOCKHIP_LIB="$<TARGET_FILE:mockhip>")
endif()
