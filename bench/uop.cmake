ugrad_bench(bench_rewrite
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_rewrite.cpp
  DEPS ugrad_uop)
