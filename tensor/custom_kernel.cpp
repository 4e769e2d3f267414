#include "tensor/custom_kernel.h"

#include <algorithm>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "schedule/custom_kernel.h"
#include "schedule/schedule.h"

namespace ugrad {

namespace {

int64_t max_elements(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d : max_dims(t.shape())) n *= d;
  return n;
}

}  // namespace

std::vector<Tensor> custom_kernel(const UOp& ast, const std::vector<Tensor>& buffers,
                                  const std::vector<UOp>& variables) {
  const int64_t id = register_kernel_ast(ast);
  std::string name = hand_written_name(ast);
  if (name.empty()) name = "unnamed";
  const KernelSlots slots = kernel_slots(ast);
  if (buffers.size() != slots.params.size())
    fail("custom kernel {}: takes {} buffers, got {}", name, slots.params.size(), buffers.size());
  const std::string device = buffers.empty() ? std::string() : buffers[0].device();
  std::vector<UOp> src;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Tensor& t = buffers[i];
    const UOp& p = slots.params[i];
    if (t.device() != device)
      fail("custom kernel {}: slot {} is on {} but slot 0 on {}", name, i, t.device(), device);
    if (t.dtype() != p.dtype().base())
      fail("custom kernel {}: slot {} takes {}, got {}", name, i, to_string(p.dtype().base()),
           to_string(t.dtype()));
    if (max_elements(t) < p.arg_as<ParamArg>().hi)
      fail("custom kernel {}: slot {} reads up to {} elements, the tensor of shape {} has {}", name,
           i, p.arg_as<ParamArg>().hi, shape_str(t.shape()), max_elements(t));
    if (slots.written[i] && !is_realized_view(t.node()))
      fail(
          "custom kernel {}: slot {} is written: pass a realized buffer (Tensor::empty for a new "
          "output), not a lazy tensor or a partial view",
          name, i);
    src.push_back(t.node());
  }
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::PARAM || u.arg_as<ParamArg>().slot >= 0) continue;
    auto it = std::find_if(variables.begin(), variables.end(), [&](const UOp& v) {
      return is_bound_variable(v) && unbind_variable(v).first == u;
    });
    if (it == variables.end())
      fail("custom kernel {}: variable '{}' [{}, {}] is not among the bound variables given", name,
           u.arg_as<ParamArg>().name, u.arg_as<ParamArg>().lo, u.arg_as<ParamArg>().hi);
    src.push_back(*it);
  }
  UOp kernel = UOp::make(Op::KERNEL, dtypes::void_, std::move(src), id);
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < buffers.size(); ++i)
    if (slots.written[i])
      outputs.emplace_back(UOp::make(Op::AFTER, buffers[i].dtype(), {buffers[i].node(), kernel}),
                           device);
  return outputs;
}

}  // namespace ugrad
