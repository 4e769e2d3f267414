// TensorJit: the JIT over a function of tensors (tinygrad's TinyJit is the model). Call 0 runs the
// function eagerly, call 1 captures the kernels it launches, later calls replay them with the new
// inputs' buffers and variable values: no scheduling, no compiling. Inputs are tensors and bound
// variables (Tensor(bind_variable(var, value))). See runtime/jit.h for the rules (outputs are
// overwritten by every call; misuse is an error).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/jit.h"
#include "tensor/tensor.h"

namespace ugrad {

class TensorJit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
  explicit TensorJit(Fn fn, std::string name = "jit");
  /// Realizes the tensor inputs, then runs, captures or replays the function.
  std::vector<Tensor> operator()(std::vector<Tensor> inputs);
  const GraphJit& graph() const { return jit_; }

 private:
  GraphJit jit_;
};

}  // namespace ugrad
