#include "tensor/jit.h"

#include "runtime/realize.h"

namespace ugrad {

namespace {

// The device of an input node: its buffer's (a variable has none: the default device).
std::string device_of_input(const UOp& u) {
  UOp b = realized_buffer(u);
  return b ? b.arg_as<BufferArg>().device : "";
}

}  // namespace

TensorJit::TensorJit(Fn fn, std::string name)
    : jit_(
          [fn = std::move(fn)](const std::vector<UOp>& in) {
            std::vector<Tensor> ts;
            for (const UOp& u : in) ts.emplace_back(u, device_of_input(u));
            std::vector<UOp> outs;
            for (const Tensor& t : fn(ts)) outs.push_back(t.node());
            return outs;
          },
          std::move(name)) {}

std::vector<Tensor> TensorJit::operator()(std::vector<Tensor> inputs) {
  std::vector<UOp> nodes;
  for (Tensor& t : inputs) {
    if (!is_bound_variable(t.node()) && !t.is_realized()) t.realize();
    nodes.push_back(t.node());
  }
  std::vector<Tensor> outs;
  for (const UOp& u : jit_(nodes)) outs.emplace_back(u, device_of_input(u));
  return outs;
}

}  // namespace ugrad
