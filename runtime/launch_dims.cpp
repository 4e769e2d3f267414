#include "runtime/launch_dims.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "uop/alu.h"

namespace ugrad {

int64_t eval_index_expr(const UOp& expr, std::span<const UOp> vars, std::span<const int64_t> values,
                        std::string_view what) {
  if (vars.size() != values.size())
    internal_error("eval_index_expr: {} variables but {} values", vars.size(), values.size());
  std::unordered_map<UOp, ConstValue> value_of;
  for (const UOp& u : expr.toposort()) {
    ConstValue v;
    if (u.op() == Op::CONST) {
      const Arg& a = u.arg();
      if (const auto* i = std::get_if<int64_t>(&a))
        v = *i;
      else if (const auto* b = std::get_if<bool>(&a))
        v = *b;
      else
        v = u.const_value();
    } else if (u.op() == Op::PARAM) {
      const ParamArg& p = u.arg_as<ParamArg>();
      auto it = std::find(vars.begin(), vars.end(), u);
      if (p.slot >= 0 || it == vars.end())
        fail("{}: launch size uses '{}', which is not one of the kernel's variables", what, p.name);
      v = values[it - vars.begin()];
    } else if (is_alu(u.op()) || u.op() == Op::CAST) {
      std::vector<ConstValue> operands;
      for (const UOp& s : u.src()) operands.push_back(value_of.at(s));
      // WHERE's operand dtype is that of its value operands; every other op's is its first source.
      DType src_dtype = u.src(u.op() == Op::WHERE ? 1 : 0).dtype();
      v = exec_alu(u.op(), u.dtype(), operands, src_dtype);
    } else {
      fail("{}: launch size holds a {} node, which is not an index expression", what,
           op_name(u.op()));
    }
    value_of.emplace(u, v);
  }
  return const_as_int(value_of.at(expr));
}

LaunchDims eval_launch_dims(const KernelSource& src, std::span<const int64_t> values,
                            uint32_t max_workgroup_size) {
  LaunchDims dims;
  auto eval = [&](const std::vector<UOp>& sizes, std::array<uint32_t, 3>& out, const char* kind) {
    if (sizes.size() > 3)
      fail("kernel {}: {} size has {} dimensions; a GPU launch has at most 3", src.name, kind,
           sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      int64_t n = eval_index_expr(sizes[i], src.vars, values,
                                  fmt::format("kernel {}: {} size[{}]", src.name, kind, i));
      if (n < 1 || n > int64_t{UINT32_MAX})
        fail("kernel {}: {} size[{}] = {} is not in 1..{}", src.name, kind, i, n, UINT32_MAX);
      out[i] = static_cast<uint32_t>(n);
    }
  };
  eval(src.global_size, dims.grid, "global");
  eval(src.local_size, dims.block, "local");
  uint64_t workgroup = uint64_t{dims.block[0]} * dims.block[1] * dims.block[2];
  if (workgroup > max_workgroup_size)
    fail("kernel {}: workgroup of {}x{}x{} = {} work-items exceeds the kernel's limit of {}",
         src.name, dims.block[0], dims.block[1], dims.block[2], workgroup, max_workgroup_size);
  return dims;
}

}  // namespace ugrad
