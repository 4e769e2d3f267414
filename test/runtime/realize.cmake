ugrad_test(test_realize
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_realize.cpp
  DEPS ugrad_runtime)
