// Building tensor graphs by hand in tests below the Tensor API (schedule/, runtime/).
#pragma once
#include <vector>

#include "schedule/schedule.h"

namespace ugrad::test {

inline UOp input(std::vector<int64_t> dims, DType dt = dtypes::float32, const char* dev = "CPU") {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return buffer_view(buffer_node(dev, dt, n), make_shape(dims));
}
inline UOp mop(Op op, const UOp& x, const std::vector<int64_t>& sizes) {
  std::vector<UOp> src{x};
  for (int64_t d : sizes) src.push_back(dim(d));
  return UOp::make(op, x.dtype(), src);
}
inline UOp permute(const UOp& x, std::vector<int64_t> order) {
  return UOp::make(Op::PERMUTE, x.dtype(), {x}, order);
}
inline UOp flip(const UOp& x, std::vector<int64_t> axes) {
  return UOp::make(Op::FLIP, x.dtype(), {x}, axes);
}
inline UOp reduce(const UOp& x, Op op, std::vector<int64_t> axes) {
  return UOp::make(Op::REDUCE_AXIS, x.dtype(), {x}, ReduceArg{op, axes});
}
inline UOp full(double v, std::vector<int64_t> dims, DType dt = dtypes::float32) {
  std::vector<int64_t> ones(dims.size(), 1);
  return mop(Op::EXPAND, mop(Op::RESHAPE, UOp::cnst(dt, v), ones), dims);
}
/// (n, k) @ (k, m) as broadcast-multiply and sum, the way the Tensor API builds it.
inline UOp matmul(const UOp& a, const UOp& b, int64_t n, int64_t k, int64_t m) {
  UOp a3 = mop(Op::EXPAND, mop(Op::RESHAPE, a, {n, 1, k}), {n, m, k});
  UOp b3 = mop(Op::EXPAND, mop(Op::RESHAPE, permute(b, {1, 0}), {1, m, k}), {n, m, k});
  return mop(Op::RESHAPE, reduce(a3 * b3, Op::ADD, {2}), {n, m});
}
inline UOp contiguous(const UOp& x) { return UOp::make(Op::CONTIGUOUS, x.dtype(), {x}); }
/// The kernel ASTs of the roots' schedule, in order.
inline std::vector<UOp> asts(const std::vector<UOp>& roots) {
  std::vector<UOp> out;
  for (const ScheduleItem& item : create_schedule(roots).items) out.push_back(item.ast);
  return out;
}

}  // namespace ugrad::test
