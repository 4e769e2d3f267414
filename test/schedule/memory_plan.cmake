ugrad_test(test_memory_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_memory_plan.cpp
  DEPS ugrad_memory_plan)
