// matmul as tinygrad builds it: operands reshaped so that the product broadcasts to
// (..., n, m, k), then a sum over k. The code generator recognises the pattern as a GEMM.
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

Tensor Tensor::matmul(const Tensor& w) const {
  if (ndim() == 0 || w.ndim() == 0)
    fail("matmul: {} @ {}: operands must have at least 1 dim", shape_str(shape()),
         shape_str(w.shape()));
  // A 1-D left operand is a row vector, a 1-D right one a column; their unit dims are dropped.
  Tensor x = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor y = w.ndim() == 1 ? w.unsqueeze(-1) : w;
  const Shape &xs = x.shape(), &ys = y.shape();
  if (!dims_equal(xs.back(), ys[ys.size() - 2]))
    fail("matmul: {} @ {}: inner dims {} and {} differ", shape_str(shape()), shape_str(w.shape()),
         xs.back().render(), ys[ys.size() - 2].render());
  // x: (..., n, k) -> (..., n, 1, k); y: (..., k, m) -> (..., 1, m, k)
  Shape xr = xs, yr = y.transpose(-1, -2).shape();
  xr.insert(xr.end() - 1, dim(1));
  yr.insert(yr.end() - 2, dim(1));
  Tensor prod = x.reshape_to(xr) * y.transpose(-1, -2).reshape_to(yr);
  Tensor r = prod.sum({-1});
  if (ndim() == 1) r = r.squeeze({-2});
  if (w.ndim() == 1) r = r.squeeze({-1});
  return r;
}

Tensor Tensor::linear(const Tensor& weight, const Tensor& bias) const {
  if (weight.ndim() != 2)
    fail("linear: weight must be (out, in), got {}", shape_str(weight.shape()));
  Tensor y = matmul(weight.transpose());
  return bias.defined() ? y + bias : y;
}

}  // namespace ugrad
