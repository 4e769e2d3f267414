// Private helpers shared by the tensor/*.cpp files: graph-node builders, axis normalisation,
// broadcasting and promotion.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "tensor/tensor.h"

namespace ugrad::tensor_detail {

/// The device a "" device name stands for (the DEV knob).
std::string resolve_device(const std::string& device);

/// Checks static dims: non-negative, element count fits in int64. Errors name `op`.
void check_dims(const std::vector<int64_t>& dims, std::string_view op);

/// "(2, 3)" for a vector of ints.
std::string dims_str(const std::vector<int64_t>& dims);

/// Axis `axis` of an `ndim`-rank tensor, negative counting from the end; Error names `op`.
int64_t norm_axis(int64_t axis, int64_t ndim, std::string_view op, const Shape& shape);
/// Sorted, unique axes; empty means all axes.
std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, const Shape& shape,
                               std::string_view op);

/// A CONST of `dtype` holding `v` (converted as CAST does), broadcast to `shape`.
Tensor const_tensor(ConstValue v, DType dtype, const Shape& shape, const std::string& device);
/// Same, holding a double.
Tensor const_like(const Tensor& t, double v, DType dtype);
Tensor const_like(const Tensor& t, double v);

/// Primitive builders (one node each).
Tensor alu(Op op, DType dtype, const std::vector<Tensor>& src);
Tensor reshape_node(const Tensor& x, const Shape& shape);
Tensor expand_node(const Tensor& x, const Shape& shape);
Tensor reduce_node(const Tensor& x, Op op, const std::vector<int64_t>& axes);

/// `x` broadcast to `shape` (rank may grow on the left) with RESHAPE + EXPAND.
Tensor broadcast_to(const Tensor& x, const Shape& shape, std::string_view op);
/// The dtype of a binary op's operands after promotion.
DType promote(DType a, DType b);
/// Operands brought to one shape and one dtype (promoted, or `dtype` if given).
std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, std::string_view op);
/// A Number as a tensor with `like`'s device, promoted against `like`'s dtype.
Tensor number_operand(Number n, const Tensor& like);

/// arange(n) as int32 on `device`: a RANGE leaf (no memory) that a kernel reads as its loop
/// index, for the internal index vectors of argmax, gather, embedding, one_hot and triangles.
Tensor index_range(int64_t n, const std::string& device);

/// The float dtype an int/bool tensor computes in (float32), or its own float dtype.
DType float_dtype(DType t);
/// The dtype's name, for messages.
inline std::string dname(DType t) { return to_string(t); }

}  // namespace ugrad::tensor_detail
