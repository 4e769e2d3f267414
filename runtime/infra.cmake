# Runtime infrastructure independent of the IR: thread pool, allocators and buffers, the
# program cache.
find_package(Threads REQUIRED)
ugrad_component(ugrad_runtime_core
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/thread_pool.cpp
    ${CMAKE_CURRENT_LIST_DIR}/allocator.cpp
    ${CMAKE_CURRENT_LIST_DIR}/program_cache.cpp
  DEPS ugrad_base Threads::Threads)
