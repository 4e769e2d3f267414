# The AMD devices (NULL:<arch> compile-only, AMD over HIP). The HIP-backed cases load the fake
# libamdhip64 of llvm.cmake; targets from later fragments resolve at generate time.
ugrad_test(test_amd_device
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_amd_device.cpp
  DEPS ugrad_runtime ${CMAKE_DL_LIBS})
add_dependencies(test_amd_device ugrad_fake_hip)
target_compile_definitions(test_amd_device PRIVATE
  UGRAD_FAKE_HIP_LIB="$<TARGET_FILE:ugrad_fake_hip>")

# Graphs on DEV=AMD through libmockhip.so (test/mockgpu, the gfx1100 emulator) against the CPU.
ugrad_test(test_amd_emulated
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_amd_emulated.cpp
  DEPS ugrad_runtime)
add_dependencies(test_amd_emulated mockhip)
target_compile_definitions(test_amd_emulated PRIVATE
  UGRAD_MOCKHIP_LIB="$<TARGET_FILE:mockhip>")

# The whole tensor op table compiled for gfx1100 through NULL:gfx1100: every kernel linked into a
# code object whose metadata matches its parameters (the NULL device validates each one).
add_test(NAME op_table_null_gfx1100 COMMAND test_tensor "--test-case=op table: *")
set_tests_properties(op_table_null_gfx1100 PROPERTIES ENVIRONMENT "DEV=NULL:gfx1100")
