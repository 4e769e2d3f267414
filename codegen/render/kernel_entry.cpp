#include "codegen/render/kernel_entry.h"

#include <fmt/format.h>

namespace ugrad {

std::string buffer_ptr_type(const CodegenTarget& target) {
  return target.global_address_space ? fmt::format("ptr addrspace({})", target.global_address_space)
                                     : "ptr";
}

std::string kernel_module(const RenderedBody& b, const KernelSignature& sig,
                          const CodegenTarget& target, const std::string& name,
                          int64_t local_threads) {
  const std::string ptr = buffer_ptr_type(target);
  std::string params;
  for (const UOp& buf : sig.buffers)
    params +=
        fmt::format("{}{} noalias align {} %data{}", params.empty() ? "" : ", ", ptr,
                    std::max<size_t>(itemsize(buf.dtype().base()), 1), buf.arg_as<ParamArg>().slot);
  for (size_t j = 0; j < sig.vars.size(); ++j)
    params += fmt::format("{}i64 %var{}", params.empty() ? "" : ", ", j);
  std::string m;
  for (const std::string& d : b.declares) m += d + "\n";
  if (target.is_gpu) {
    m += fmt::format("\ndefine amdgpu_kernel void @{}({}) #0 {{\nentry:\n", name, params);
    m += "  %core_id = add i64 0, 0\n  %n_cores = add i64 1, 0\n";
    m += b.allocas + b.body + "  ret void\n}\n";
    m += fmt::format(
        "\nattributes #0 = {{ nounwind \"amdgpu-flat-work-group-size\"=\"1,{}\" "
        "\"no-trapping-math\"=\"true\" }}\n",
        local_threads);
    return b.globals + m;
  }
  m += fmt::format(
      "\ndefine internal void @{}_body({}{}i64 %core_id, i64 %n_cores) #0 {{\n"
      "entry:\n",
      name, params, params.empty() ? "" : ", ");
  m += b.allocas + b.body + "  ret void\n}\n";
  // The entry unpacks args[] so the body can take noalias pointers.
  m +=
      fmt::format("\ndefine void @{}(ptr %args, i64 %core_id, i64 %n_cores) #1 {{\nentry:\n", name);
  std::string call;
  for (const UOp& buf : sig.buffers) {
    const int64_t slot = buf.arg_as<ParamArg>().slot;
    m += fmt::format(
        "  %a{0} = getelementptr ptr, ptr %args, i64 {0}\n  %p{0} = load ptr, ptr %a{0}\n", slot);
    call += fmt::format("ptr %p{}, ", slot);
  }
  for (size_t j = 0; j < sig.vars.size(); ++j) {
    const size_t at = sig.buffers.size() + j;
    m += fmt::format(
        "  %va{0} = getelementptr ptr, ptr %args, i64 {1}\n"
        "  %vp{0} = load ptr, ptr %va{0}\n  %v{0} = ptrtoint ptr %vp{0} to i64\n",
        j, at);
    call += fmt::format("i64 %v{}, ", j);
  }
  m += fmt::format("  call void @{}_body({}i64 %core_id, i64 %n_cores)\n  ret void\n}}\n", name,
                   call);
  m += "\nattributes #0 = { alwaysinline nounwind \"no-trapping-math\"=\"true\" }\n"
       "attributes #1 = { nounwind \"no-trapping-math\"=\"true\" }\n";
  return m;
}

}  // namespace ugrad
