ugrad_test(test_jit
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_jit.cpp
  DEPS ugrad_runtime)
