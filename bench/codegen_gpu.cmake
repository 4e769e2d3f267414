# GPU code generation: compile latency per kernel for gfx1100 (codegen + LLVM + in-process link).
ugrad_bench(bench_compile_gpu SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_compile_gpu.cpp
  DEPS ugrad_codegen ugrad_llvm_backend ugrad_runtime_core)
