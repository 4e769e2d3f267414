# Tensor graph -> kernels.
ugrad_component(ugrad_schedule
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/kernelize.cpp ${CMAKE_CURRENT_LIST_DIR}/decide_buffers.cpp
    ${CMAKE_CURRENT_LIST_DIR}/build_kernels.cpp ${CMAKE_CURRENT_LIST_DIR}/kernel_walk.cpp
    ${CMAKE_CURRENT_LIST_DIR}/schedule_cache.cpp ${CMAKE_CURRENT_LIST_DIR}/variables.cpp
    ${CMAKE_CURRENT_LIST_DIR}/index_math.cpp ${CMAKE_CURRENT_LIST_DIR}/custom_kernel.cpp
  DEPS ugrad_uop)
