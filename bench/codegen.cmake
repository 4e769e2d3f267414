# Code generator benchmarks: GEMM against OpenBLAS and a naive loop, elementwise/reduce bandwidth
# against memcpy. OpenBLAS (Debian libopenblas-dev) is a benchmark-only dependency.
find_library(UGRAD_OPENBLAS openblas)
find_path(UGRAD_CBLAS_INCLUDE cblas.h PATH_SUFFIXES x86_64-linux-gnu)
if(UGRAD_OPENBLAS AND UGRAD_CBLAS_INCLUDE)
  ugrad_bench(bench_gemm SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_gemm.cpp
    DEPS ugrad_codegen ugrad_llvm_backend ugrad_runtime_core ${UGRAD_OPENBLAS})
  target_include_directories(bench_gemm PRIVATE ${UGRAD_CBLAS_INCLUDE})
else()
  message(STATUS "ugrad: OpenBLAS not found (libopenblas-dev); bench_gemm is not built")
endif()
ugrad_bench(bench_elementwise SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_elementwise.cpp
  DEPS ugrad_codegen ugrad_llvm_backend ugrad_runtime_core)
