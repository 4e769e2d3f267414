ugrad_test(test_realize
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_realize.cpp
  DEPS ugrad_runtime)

ugrad_test(test_kernel_memo
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernel_memo.cpp
  DEPS ugrad_runtime)
