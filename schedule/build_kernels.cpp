// Stage 2 of the scheduler: one kernel AST per buffer decided in stage 1, built by walking the
// node's graph from the output inwards (kernel_walk.h), turning movement ops into index math.
// The buffers are final: a node the reduce rules would still want materialized is a bug of
// stage 1, not a buffer to add.
#include "schedule/kernelize.h"

#include "base/error.h"
#include "schedule/custom_kernel.h"
#include "schedule/index_math.h"
#include "schedule/kernel_walk.h"

namespace ugrad {

namespace im = index_math;

namespace {

class AstBuilder {
 public:
  AstBuilder(const UOp& out, const std::unordered_map<UOp, UOp>& buffers)
      : out_(out), buffers_(buffers), walk_(out, buffers) {}

  ScheduleItem build() {
    Ctx c = walk_.output_ctx();
    UOp target_buf, store_idx, store_valid, value;
    if (out_.op() == Op::ASSIGN) {
      std::tie(target_buf, store_idx, store_valid) = view_index(out_.src(0), c);
      if (store_valid) fail("assign into a padded view is not supported");
    } else {
      target_buf = buffers_.at(out_);
      store_idx = im::flatten(c.idx, make_shape(max_dims(shape_of(out_))));
    }
    UOp param = param_of(target_buf);  // the first buffer named takes slot 0: the output
    value = out_.op() == Op::ASSIGN ? eval(out_.src(1), c) : compute(out_, c);
    UOp index = UOp::make(Op::INDEX, param.dtype(), {param, store_idx});
    UOp store = UOp::make(Op::STORE, dtypes::void_, {index, value});
    return {UOp::make(Op::SINK, dtypes::void_, {store}), slots_};
  }

 private:
  // The PARAM of a buffer in this kernel, numbered in order of first use.
  UOp param_of(const UOp& buf) {
    auto it = params_.find(buf);
    if (it != params_.end()) return it->second;
    int64_t slot = static_cast<int64_t>(slots_.size());
    slots_.push_back(buf);
    UOp p =
        UOp::make(Op::PARAM, buf.dtype().ptr(), {},
                  ParamArg{slot, "data" + std::to_string(slot), 0, buf.arg_as<BufferArg>().size});
    params_.emplace(buf, p);
    return p;
  }

  // Walks a movement chain down to its BUFFER: (buffer, flat index, gate).
  std::tuple<UOp, UOp, UOp> view_index(UOp node, Ctx c) {
    while (node.op() != Op::BUFFER) {
      if (!is_movement(node.op())) fail("assign target must be a view of a realized buffer");
      c = walk_.src_ctx(node, c);
      node = node.src(0);
    }
    return {node, c.idx.at(0), c.valid};
  }

  // The value of `node` in context `c`: materialized nodes load from their buffers.
  UOp eval(const UOp& node, const Ctx& c) {
    if (node.op() == Op::ASSIGN) return eval(node.src(0), c);  // read what the assign wrote
    if (auto it = buffers_.find(node); it != buffers_.end()) {
      const Shape& shape = shape_of(node);
      return load(it->second, im::flatten(c.idx, make_shape(max_dims(shape))), c.valid);
    }
    return compute(node, c);
  }

  UOp load(const UOp& buf, const UOp& idx, const UOp& valid) {
    UOp p = param_of(buf);
    std::vector<UOp> isrc{p, idx};
    if (valid) isrc.push_back(valid);
    return UOp::make(Op::LOAD, buf.dtype(), {UOp::make(Op::INDEX, p.dtype(), isrc)});
  }

  // The value of `root` computed in this kernel, each (node, context) built once.
  UOp compute(const UOp& root, const Ctx& rc) {
    auto value = [&](const UOp& u, const Ctx& c, const KernelWalk::Sources& srcs) {
      std::vector<UOp> vals;
      for (auto& [s, sc] : srcs)
        vals.push_back(walk_.is_load(s) ? eval(s, sc) : walk_.value_at(s, sc));
      return combine(u, c, vals);
    };
    if (UOp need = walk_.walk(root, rc, value))
      internal_error("building a kernel found that {} needs a buffer: decide_buffers missed it",
                     op_name(need.op()));
    return walk_.value_at(root, rc);
  }

  UOp combine(const UOp& u, const Ctx& c, const std::vector<UOp>& v) {
    switch (u.op()) {
      case Op::BUFFER:
        return load(u, c.idx.at(0), c.valid);
      case Op::CONST:
      case Op::PARAM:
        return u;
      case Op::RANGE:  // an arange: its value is the index of its one axis
        return c.idx.at(0).cast(u.dtype());
      case Op::CONTIGUOUS:
      case Op::DETACH:
        return v[0];
      case Op::PAD: {
        UOp gate = walk_.src_ctx(u, c).valid;
        if (!gate || gate == c.valid) return v[0];
        return gate.where(v[0], UOp::cnst(u.dtype(), 0));
      }
      case Op::REDUCE_AXIS: {
        std::vector<UOp> src{v[0]};
        for (const UOp& r : walk_.reduce_ranges(u, c)) src.push_back(r);
        return UOp::make(Op::REDUCE, u.dtype(), src, u.arg_as<ReduceArg>().op);
      }
      default:
        if (is_movement(u.op())) return v[0];
        return u.replace_src(v);
    }
  }

  UOp out_;
  const std::unordered_map<UOp, UOp>& buffers_;
  KernelWalk walk_;
  std::unordered_map<UOp, UOp> params_;
  std::vector<UOp> slots_;
};

// COPY(PARAM slot 1): slot 1's bytes into slot 0, on the destination's device.
ScheduleItem copy_item(const UOp& node, const std::unordered_map<UOp, UOp>& buffers) {
  UOp src = node.src(0);
  if (auto it = buffers.find(src); it != buffers.end()) src = it->second;
  src = base_buffer(src);  // a realized view
  const BufferArg& from = src.arg_as<BufferArg>();
  UOp param = UOp::make(Op::PARAM, src.dtype().ptr(), {}, ParamArg{1, "data1", 0, from.size});
  UOp ast = UOp::make(Op::COPY, node.dtype(), {param}, node.arg_as<std::string>());
  return {ast, {buffers.at(node), src}};
}

// A hand-written kernel: its registered AST over its buffers in slot order (a realized view reads
// its own buffer; anything else was materialized by decide_buffers).
ScheduleItem custom_kernel_item(const UOp& node, const std::unordered_map<UOp, UOp>& buffers) {
  ScheduleItem item{kernel_ast(node), {}};
  for (const UOp& s : node.src()) {
    if (s.op() == Op::PARAM) continue;  // a variable: passed by name at launch
    auto it = buffers.find(s);
    item.buffers.push_back(base_buffer(it != buffers.end() ? it->second : s));
  }
  return item;
}

}  // namespace

std::vector<ScheduleItem> build_kernels(const BufferPlan& plan) {
  std::vector<ScheduleItem> items;
  for (const UOp& node : plan.kernels) {
    if (node.op() == Op::KERNEL) {
      items.push_back(custom_kernel_item(node, plan.buffers));
      continue;
    }
    bool empty = plan.buffers.at(node).arg_as<BufferArg>().size == 0;
    if (node.op() == Op::COPY) {
      if (!empty) items.push_back(copy_item(node, plan.buffers));
      continue;
    }
    ScheduleItem item = AstBuilder(node, plan.buffers).build();
    for (const UOp& d : shape_of(node)) empty = empty || d.is_const(0);
    if (!empty) items.push_back(std::move(item));
  }
  return items;
}

}  // namespace ugrad
