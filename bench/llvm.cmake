ugrad_bench(bench_compile SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_compile.cpp DEPS ugrad_llvm_backend)
