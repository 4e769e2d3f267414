ugrad_test(test_schedule
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_schedule.cpp
  DEPS ugrad_schedule)
ugrad_test(test_kernel_structure
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernel_structure.cpp
  DEPS ugrad_schedule)
ugrad_test(test_kernel_walk
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernel_walk.cpp
  DEPS ugrad_schedule)
