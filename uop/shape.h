// Shapes of tensor-graph UOps. A dimension is an index-typed UOp: a CONST for a static size, or a
// symbolic expression over variables (e.g. T, start_pos+T). Shapes are inferred per op and cached.
//
// The tensor graph (what tensor/ builds and schedule/ consumes):
//   BUFFER                      shape (size,)   storage; arg BufferArg
//   CONST                       shape ()        a scalar; broadcast with RESHAPE + EXPAND
//   PARAM (slot -1)             shape ()        a symbolic variable read as a value
//   RANGE(n), dtype int32       shape (n,)      0, 1, ..., n-1 (an arange the scheduler turns
//                                               into the loop index)
//   ALU ops, CAST, BITCAST      sources all of one shape (no implicit broadcasting)
//   RESHAPE(x, d...)            shape (d...), same element count
//   EXPAND(x, d...)             each old dim is 1 or equal to the new one
//   PERMUTE(x) arg order        dims reordered
//   PAD(x, b..., a...)          dim + before + after (zero fill)
//   SHRINK(x, s..., e...)       end - start
//   FLIP(x) arg axes            same shape
//   REDUCE_AXIS(x) arg (op, axes)   reduced axes become 1 (keepdim)
//   CONTIGUOUS, DETACH, COPY    same shape
//   ASSIGN(target, value)       the target's shape
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

using Shape = std::vector<UOp>;

/// An index CONST for a static dimension.
UOp dim(int64_t n);
/// A shape of static dimensions.
Shape make_shape(const std::vector<int64_t>& dims);
/// The shape of a tensor-graph node (cached on the node). Errors name the op and the shapes.
const Shape& shape_of(const UOp& u);
/// The dims as integers when all are constant.
std::optional<std::vector<int64_t>> static_dims(const Shape& s);
/// The dims' upper bounds (vmax): the allocation size of a symbolic shape.
std::vector<int64_t> max_dims(const Shape& s);
/// Product of the dims (an index UOp, simplified only for constants).
UOp prod(const Shape& s);
/// "(2, 3, T)".
std::string shape_str(const Shape& s);
/// True when two dims are the same value (identical UOps or equal constants).
bool dims_equal(const UOp& a, const UOp& b);

}  // namespace ugrad

namespace ugrad {
/// A fresh BUFFER node: `count` elements of `dtype` on `device`, with a process-unique id.
UOp buffer_node(const std::string& device, DType dtype, int64_t count);
/// The id the next buffer_node will get: buffers with a smaller id already existed.
int64_t next_buffer_id();
}  // namespace ugrad
