# LLVM back ends: IR text -> x86 code in the ORC JIT, or -> AMDGPU HSA code objects (in-process lld),
# and the HIP runtime loaded with dlopen. LLVM headers stay inside these .cpp files.
set(_llvm_dir ${CMAKE_CURRENT_LIST_DIR})
ugrad_component(ugrad_llvm_backend
  SOURCES
    ${_llvm_dir}/llvm_target.cpp ${_llvm_dir}/llvm_compile.cpp ${_llvm_dir}/llvm_disasm.cpp
    ${_llvm_dir}/cpu_jit.cpp
    ${_llvm_dir}/amd/amd_code_object.cpp ${_llvm_dir}/amd/amd_link.cpp
    ${_llvm_dir}/amd/amd_compile.cpp ${_llvm_dir}/amd/amd_kernargs.cpp
    ${_llvm_dir}/amd/hip_api.cpp ${_llvm_dir}/amd/hip_device.cpp
  DEPS ugrad_uop
  PRIVATE_DEPS ugrad_llvm lldELF lldCommon ${CMAKE_DL_LIBS})
