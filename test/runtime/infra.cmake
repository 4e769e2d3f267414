ugrad_test(test_runtime_core
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/test_thread_pool.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_allocator.cpp
    ${CMAKE_CURRENT_LIST_DIR}/test_program_cache.cpp
  DEPS ugrad_runtime_core)
