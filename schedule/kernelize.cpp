// The scheduler's entry: decide_buffers (which nodes get a buffer), then build_kernels (one kernel
// AST per buffer); and the realized views of buffers.
#include "schedule/kernelize.h"

#include "schedule/custom_kernel.h"

namespace ugrad {

UOp buffer_view(const UOp& buffer, const Shape& shape) {
  std::vector<int64_t> maxd = max_dims(shape);
  std::vector<UOp> src{buffer};
  for (int64_t d : maxd) src.push_back(dim(d));
  UOp v = UOp::make(Op::RESHAPE, buffer.dtype(), src);
  if (static_dims(shape)) return v;
  std::vector<UOp> sh{v};
  for (size_t i = 0; i < shape.size(); ++i) sh.push_back(dim(0));
  for (const UOp& d : shape) sh.push_back(d);
  return UOp::make(Op::SHRINK, buffer.dtype(), sh);
}

bool is_realized_view(const UOp& node) {
  UOp b = node;
  while (is_movement(b.op())) b = b.src(0);
  if (b.op() != Op::BUFFER) return false;
  if (node == b) return true;
  const Shape& s = shape_of(node);
  return buffer_view(b, s) == node;
}

Schedule build_schedule(const std::vector<UOp>& roots) {
  BufferPlan plan = decide_buffers(roots);
  Schedule sched;
  sched.items = build_kernels(plan);
  for (const UOp& r : roots) {
    if (is_realized_view(r))
      sched.outputs.push_back(r);
    else if (r.op() == Op::ASSIGN || is_kernel_output(r))
      sched.outputs.push_back(r.src(0));
    else
      sched.outputs.push_back(buffer_view(plan.buffers.at(r), shape_of(r)));
  }
  return sched;
}

}  // namespace ugrad
