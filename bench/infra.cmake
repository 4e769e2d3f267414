ugrad_bench(bench_thread_pool
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/bench_thread_pool.cpp
  DEPS ugrad_runtime_core ugrad_memory_plan)
