#include "tensor/jit.h"

#include "runtime/realize.h"

namespace ugrad {

TensorJit::TensorJit(Fn fn, std::string name)
    : jit_(
          [fn = std::move(fn)](const std::vector<UOp>& in, const VarVals& vars) {
            std::vector<Tensor> ts;
            for (const UOp& u : in)
              ts.emplace_back(u, realized_buffer(u).arg_as<BufferArg>().device);
            std::vector<UOp> outs;
            for (const Tensor& t : fn(ts, vars)) outs.push_back(t.node());
            return outs;
          },
          std::move(name)) {}

std::vector<Tensor> TensorJit::operator()(std::vector<Tensor> inputs, const VarVals& vars) {
  std::vector<UOp> nodes;
  for (Tensor& t : inputs) {
    if (!t.is_realized()) t.realize(vars);
    nodes.push_back(t.node());
  }
  std::vector<Tensor> outs;
  for (const UOp& u : jit_(nodes, vars))
    outs.emplace_back(u, realized_buffer(u).arg_as<BufferArg>().device);
  return outs;
}

}  // namespace ugrad
