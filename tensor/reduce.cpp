// Reductions: sum, prod and max are REDUCE_AXIS nodes (which keep the reduced dims as 1); the rest
// are composed from them.
#include <cmath>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

// The reduced axes removed from the shape (keepdim = false).
Tensor drop_axes(const Tensor& r, const std::vector<int64_t>& axes, bool keepdim) {
  if (keepdim || axes.empty()) return r;
  Shape s;
  for (size_t i = 0; i < r.shape().size(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(i)))
      s.push_back(r.shape()[i]);
  return reshape_node(r, s);
}

Tensor reduce(const Tensor& x, Op op, const std::vector<int64_t>& axes, bool keepdim,
              std::string_view name) {
  std::vector<int64_t> ax = norm_axes(axes, x.shape(), name);
  return drop_axes(reduce_node(x, op, ax), ax, keepdim);
}

// The order-reversing map: -x for floats, ~x for ints, !x for bool.
Tensor inverse(const Tensor& t) { return is_float(t.dtype()) ? t.neg() : t.bitwise_not(); }

// Number of elements over the reduced axes: a constant, or (symbolic dims) an index expression.
UOp reduced_count(const Tensor& x, const std::vector<int64_t>& axes, std::string_view name) {
  Shape dims;
  for (int64_t a : norm_axes(axes, x.shape(), name)) dims.push_back(x.shape()[a]);
  return prod(dims);
}

// n - correction clamped at 0, as `dtype` (a constant, or read when the graph runs).
Tensor count_tensor(const UOp& n, int64_t correction, DType dtype, const std::string& device) {
  if (n.is_const())
    return const_tensor(static_cast<double>(std::max<int64_t>(0, n.const_int() - correction)),
                        dtype, {}, device);
  return maximum(Tensor::from_dim(n, device) - correction, 0).cast(dtype);
}

// `x` with `axis` moved to the end, and the order that moves it back.
std::pair<Tensor, std::vector<int64_t>> axis_to_last(const Tensor& x, int64_t axis) {
  std::vector<int64_t> order, back(x.ndim());
  for (int64_t i = 0; i < x.ndim(); ++i)
    if (i != axis) order.push_back(i);
  order.push_back(axis);
  for (int64_t i = 0; i < x.ndim(); ++i) back[order[i]] = i;
  return {x.permute(order), back};
}

}  // namespace

Tensor Tensor::sum(std::vector<int64_t> axes, bool keepdim) const {
  DType acc = sum_acc_dtype(dtype());
  Tensor r = reduce(cast(acc), Op::ADD, axes, keepdim, "sum");
  // Halves accumulate in float32 and are cast back; ints keep the wider accumulator.
  return is_float(dtype()) ? r.cast(dtype()) : r;
}

Tensor Tensor::prod(std::vector<int64_t> axes, bool keepdim) const {
  return reduce(*this, Op::MUL, axes, keepdim, "prod");
}

Tensor Tensor::max(std::vector<int64_t> axes, bool keepdim) const {
  return reduce(*this, Op::MAX, axes, keepdim, "max");
}

Tensor Tensor::min(std::vector<int64_t> axes, bool keepdim) const {
  return inverse(inverse(*this).max(std::move(axes), keepdim));
}

Tensor Tensor::mean(std::vector<int64_t> axes, bool keepdim) const {
  UOp n = reduced_count(*this, axes, "mean");
  DType out = float_dtype(dtype()), acc = sum_acc_dtype(out);
  Tensor s = reduce(cast(acc), Op::ADD, axes, keepdim, "mean");
  if (n.is_const()) return (s * (1.0 / static_cast<double>(n.const_int()))).cast(out);
  return (s / count_tensor(n, 0, acc, device())).cast(out);
}

Tensor Tensor::var(std::vector<int64_t> axes, bool keepdim, int64_t correction) const {
  UOp n = reduced_count(*this, axes, "var");
  DType out = float_dtype(dtype()), acc = sum_acc_dtype(out);
  Tensor x = cast(acc);
  Tensor d = x - x.mean(axes, true);
  Tensor ss = reduce(d * d, Op::ADD, axes, keepdim, "var");
  return (ss / count_tensor(n, correction, acc, device())).cast(out);
}

Tensor Tensor::std(std::vector<int64_t> axes, bool keepdim, int64_t correction) const {
  return var(std::move(axes), keepdim, correction).sqrt();
}

Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const {
  if (!axis) {
    Tensor r = flatten().argmax(0);
    return keepdim ? r.reshape(std::vector<int64_t>(ndim(), 1)) : r;
  }
  int64_t a = norm_axis(*axis, ndim(), "argmax", shape());
  int64_t n = size(a);
  // The first maximum: candidates count down from n at index 0, so the largest wins.
  std::vector<int64_t> idx_shape(ndim(), 1);
  idx_shape[a] = n;
  Tensor countdown = n - index_range(n, device()).reshape(idx_shape);
  Tensor cand = eq(max({a}, true)).where(countdown, 0);
  return drop_axes(n - cand.max({a}, true), {a}, keepdim).cast(dtypes::int32);
}

Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const {
  return inverse(*this).argmax(axis, keepdim);
}

Tensor Tensor::softmax(int64_t axis) const {
  Tensor x = cast(float_dtype(dtype()));
  Tensor e = (x - x.max({axis}, true).detach()).exp();
  return e / e.sum({axis}, true);
}

Tensor Tensor::log_softmax(int64_t axis) const {
  Tensor x = cast(float_dtype(dtype()));
  Tensor z = x - x.max({axis}, true).detach();
  return z - z.exp().sum({axis}, true).log();
}

Tensor Tensor::logsumexp(int64_t axis, bool keepdim) const {
  Tensor x = cast(float_dtype(dtype()));
  Tensor m = x.max({axis}, true);
  // An all -inf row has max -inf; shifting by 0 instead keeps the result -inf rather than nan.
  Tensor shift = (m.eq(INFINITY) | m.eq(-INFINITY)).where(0.0, m).detach();
  Tensor r = (x - shift).exp().sum({axis}, true).log() + shift;
  int64_t a = norm_axis(axis, ndim(), "logsumexp", shape());
  return drop_axes(r, {a}, keepdim);
}

// NOTE: a masked sum over an n x n triangle (O(n^2) work); fine for the lengths models use.
Tensor Tensor::cumsum(int64_t axis) const {
  if (ndim() == 0) return sum();
  int64_t a = norm_axis(axis, ndim(), "cumsum", shape());
  int64_t n = size(a);
  auto [xt, back] = axis_to_last(*this, a);
  std::vector<int64_t> big = xt.dims();
  big.insert(big.end() - 1, n);  // (..., n_out, n_in)
  Tensor xe = xt.unsqueeze(-2).expand(big);
  Tensor tri = ones({n, n}, dtypes::bool_, device()).tril();
  return tri.where(xe, 0).sum({-1}).permute(back);
}

}  // namespace ugrad
