# Arena planning for the intermediate buffers of a schedule.
ugrad_component(ugrad_memory_plan
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/memory_plan.cpp
  DEPS ugrad_uop)
