// Scheduling: decide what to materialize, then build one kernel AST per materialized node by
// walking its graph from the output inwards, turning movement ops into index math.
#include "schedule/kernelize.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/env.h"
#include "base/error.h"
#include "schedule/index_math.h"

namespace ugrad {

namespace im = index_math;

namespace {

UOp skip_views(UOp u) {
  while (is_movement(u.op()) || u.op() == Op::CAST) u = u.src(0);
  return u;
}

// sum(where(x == arange, v, 0)), as tensor/indexing.cpp writes a gather. The summed axis is not
// checked: such a sum over another axis is exempt too, and computed in place, loop and all.
bool is_one_hot_sum(const UOp& red) {
  const UOp w = skip_views(red.src(0));
  if (w.op() != Op::WHERE) return false;
  const UOp zero = skip_views(w.src(2)), eq = skip_views(w.src(0));
  if (!zero.is_const(0) || eq.op() != Op::CMPEQ) return false;
  return skip_views(eq.src(0)).op() == Op::RANGE || skip_views(eq.src(1)).op() == Op::RANGE;
}

}  // namespace

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

namespace {

// Where a value is computed: the index of each axis of its shape, the ranges in scope, and a gate
// (empty = always valid).
struct Ctx {
  std::vector<UOp> idx;
  std::vector<UOp> scope;
  UOp valid;
};

std::string ctx_key(const UOpNode* node, const Ctx& c) {
  std::string k(reinterpret_cast<const char*>(&node), sizeof(node));
  auto add = [&](const UOp& u) {
    const UOpNode* p = u.node();
    k.append(reinterpret_cast<const char*>(&p), sizeof(p));
  };
  for (const UOp& u : c.idx) add(u);
  k += '|';
  for (const UOp& u : c.scope) add(u);
  k += '|';
  add(c.valid);
  return k;
}

// Thrown while building a kernel when a node must be materialized after all.
struct NeedMaterialize {
  UOp node;
};

class AstBuilder {
 public:
  AstBuilder(const UOp& out, const std::unordered_map<UOp, UOp>& buffers)
      : out_(out), buffers_(buffers) {}

  ScheduleItem build() {
    const Shape& shape = shape_of(out_);
    Ctx c;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i].is_const(1)) {
        c.idx.push_back(dim(0));
      } else {
        UOp r = UOp::range(shape[i], next_axis_++, AxisType::Loop);
        c.idx.push_back(r);
        c.scope.push_back(r);
      }
    }
    UOp target_buf, store_idx, store_valid, value;
    if (out_.op() == Op::ASSIGN) {
      std::tie(target_buf, store_idx, store_valid) = view_index(out_.src(0), c);
      if (store_valid) fail("assign into a padded view is not supported");
    } else {
      target_buf = buffers_.at(out_);
      store_idx = im::flatten(c.idx, make_shape(max_dims(shape)));
    }
    UOp param = param_of(target_buf);  // the first buffer named takes slot 0: the output
    value = out_.op() == Op::ASSIGN ? eval(out_.src(1), c) : eval_inner(out_, c);
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
      c = src_ctx(node, c);
      node = node.src(0);
    }
    return {node, c.idx.at(0), c.valid};
  }

  // The context of a movement op's (or a reduce's) source, given the op's own context.
  Ctx src_ctx(const UOp& u, const Ctx& c) {
    const Shape& in = shape_of(u.src(0));
    const Shape& out = shape_of(u);
    Ctx s{{}, c.scope, c.valid};
    switch (u.op()) {
      case Op::RESHAPE:
        s.idx = reshape_idx(c.idx, out, in);
        break;
      case Op::EXPAND:
        for (size_t i = 0; i < in.size(); ++i)
          s.idx.push_back(in[i].is_const(1) && !out[i].is_const(1) ? dim(0) : c.idx[i]);
        break;
      case Op::PERMUTE: {
        const auto& order = u.arg_as<std::vector<int64_t>>();
        s.idx.resize(in.size());
        for (size_t i = 0; i < order.size(); ++i) s.idx[order[i]] = c.idx[i];
        break;
      }
      case Op::PAD:
        for (size_t i = 0; i < in.size(); ++i) {
          const UOp& before = u.src(1 + i);
          const UOp& after = u.src(1 + in.size() + i);
          UOp x = im::sub(c.idx[i], before);
          s.idx.push_back(x);
          if (!before.is_const(0)) s.valid = im::both(s.valid, dim(-1).lt(x));  // x >= 0
          if (!after.is_const(0)) s.valid = im::both(s.valid, x.lt(in[i]));
        }
        break;
      case Op::SHRINK:
        for (size_t i = 0; i < in.size(); ++i) s.idx.push_back(im::add(c.idx[i], u.src(1 + i)));
        break;
      case Op::FLIP: {
        const auto& axes = u.arg_as<std::vector<int64_t>>();
        s.idx = c.idx;
        for (int64_t a : axes) s.idx[a] = im::sub(im::sub(in[a], dim(1)), c.idx[a]);
        break;
      }
      default:
        internal_error("src_ctx of {}", op_name(u.op()));
    }
    return s;
  }

  static std::vector<UOp> reshape_idx(const std::vector<UOp>& idx, const Shape& out,
                                      const Shape& in) {
    // Fast path: only size-1 axes were added or removed; the other axes map in order.
    std::vector<size_t> out_big, in_big;
    for (size_t i = 0; i < out.size(); ++i)
      if (!out[i].is_const(1)) out_big.push_back(i);
    for (size_t i = 0; i < in.size(); ++i)
      if (!in[i].is_const(1)) in_big.push_back(i);
    bool same = out_big.size() == in_big.size();
    for (size_t k = 0; same && k < out_big.size(); ++k)
      same = dims_equal(out[out_big[k]], in[in_big[k]]);
    if (same) {
      std::vector<UOp> r(in.size(), dim(0));
      for (size_t k = 0; k < in_big.size(); ++k) r[in_big[k]] = idx[out_big[k]];
      return r;
    }
    return im::unflatten(im::flatten(idx, out), in);
  }

  // Evaluates `node` in context `c`, materialized nodes load from their buffers.
  UOp eval(const UOp& node, const Ctx& c) {
    if (node.op() == Op::ASSIGN) return eval(node.src(0), c);  // read what the assign wrote
    if (auto it = buffers_.find(node); it != buffers_.end()) {
      const Shape& shape = shape_of(node);
      return load(it->second, im::flatten(c.idx, make_shape(max_dims(shape))), c.valid);
    }
    return eval_inner(node, c);
  }

  UOp load(const UOp& buf, const UOp& idx, const UOp& valid) {
    UOp p = param_of(buf);
    std::vector<UOp> isrc{p, idx};
    if (valid) isrc.push_back(valid);
    return UOp::make(Op::LOAD, buf.dtype(), {UOp::make(Op::INDEX, p.dtype(), isrc)});
  }

  // Evaluation with an explicit stack: each (node, context) is built once, after its sources.
  UOp eval_inner(const UOp& root, const Ctx& rc) {
    struct Item {
      UOp node;
      Ctx ctx;
      std::string key;
      bool expanded = false;
      std::vector<std::pair<UOp, Ctx>> srcs;
    };
    std::vector<Item> stack;
    stack.push_back({root, rc, ctx_key(root.node(), rc), false, {}});
    while (!stack.empty()) {
      Item& it = stack.back();
      if (memo_.count(it.key)) {
        stack.pop_back();
        continue;
      }
      if (!it.expanded) {
        it.expanded = true;
        check_unique_context(it.node, it.key);
        it.srcs = sources(it.node, it.ctx);
        std::vector<Item> push;
        for (auto& [s, sc] : it.srcs) {
          if (buffers_.count(s) && !(s == out_)) continue;  // a load, built inline
          std::string k = ctx_key(s.node(), sc);
          if (!memo_.count(k)) push.push_back({s, sc, k, false, {}});
        }
        for (auto& p : push) stack.push_back(std::move(p));
        continue;
      }
      std::vector<UOp> vals;
      for (auto& [s, sc] : it.srcs) {
        if (buffers_.count(s) && !(s == out_))
          vals.push_back(eval(s, sc));
        else
          vals.push_back(memo_.at(ctx_key(s.node(), sc)));
      }
      UOp v = combine(it.node, it.ctx, vals);
      memo_.emplace(it.key, v);
      stack.pop_back();
    }
    return memo_.at(ctx_key(root.node(), rc));
  }

  // A node holding a reduce may be computed in only one context per kernel.
  void check_unique_context(const UOp& node, const std::string& key) {
    if (node.op() == Op::CONST || node.op() == Op::BUFFER || !has_reduce(node)) return;
    auto [it, inserted] = reduce_ctx_.emplace(node, key);
    if (!inserted && it->second != key) throw NeedMaterialize{node};
  }

  bool has_reduce(const UOp& node) {
    if (auto it = has_reduce_.find(node); it != has_reduce_.end()) return it->second;
    auto boundary = [&](const UOp& u) { return !(u == out_) && buffers_.count(u); };
    for (const UOp& u :
         node.toposort([&](const UOp& u) { return !boundary(u) && !has_reduce_.count(u); })) {
      bool r = u.op() == Op::REDUCE_AXIS;
      for (const UOp& s : u.src()) r = r || (!boundary(s) && has_reduce_.at(s));
      has_reduce_.emplace(u, r);
    }
    return has_reduce_.at(node);
  }

  // The (source, context) pairs a node's value needs.
  std::vector<std::pair<UOp, Ctx>> sources(const UOp& u, const Ctx& c) {
    std::vector<std::pair<UOp, Ctx>> out;
    if (is_movement(u.op())) {
      out.emplace_back(u.src(0), src_ctx(u, c));
    } else if (u.op() == Op::REDUCE_AXIS) {
      // Every range in scope must index the reduce, else it would be recomputed per iteration.
      // A reduce inside another reduce's loop is materialized too: nested, it is a whole matmul
      // inside a reduction, a kernel the code generator gives no vector lanes (a norm of a block's
      // output ran the block's down projection that way: 18 ms per Q4_K decode step). Kernels
      // built before this one still compute it inline: they are not rebuilt. A one-hot sum (a
      // gather) is exempt from both: the code generator turns it into one load.
      if (!(u == out_) && !is_one_hot_sum(u)) {
        std::unordered_set<UOp> used;
        for (const UOp& i : c.idx)
          for (const UOp& x : i.toposort())
            if (x.op() == Op::RANGE) used.insert(x);
        for (const UOp& r : c.scope)
          if (!used.count(r) || r.arg_as<RangeArg>().type == AxisType::Reduce)
            throw NeedMaterialize{u};
      }
      Ctx s = c;
      const Shape& in = shape_of(u.src(0));
      for (int64_t a : u.arg_as<ReduceArg>().axes) {
        UOp r = UOp::range(in[a], next_axis_++, AxisType::Reduce);
        s.idx[a] = r;
        s.scope.push_back(r);
      }
      reduce_ranges_[ctx_key(u.node(), c)] =
          std::vector<UOp>(s.scope.begin() + c.scope.size(), s.scope.end());
      out.emplace_back(u.src(0), s);
    } else if (u.op() == Op::BUFFER || u.op() == Op::CONST || u.op() == Op::PARAM ||
               u.op() == Op::RANGE) {
    } else if (is_alu(u.op()) || u.op() == Op::CONTIGUOUS || u.op() == Op::DETACH) {
      for (const UOp& s : u.src()) out.emplace_back(s, c);
    } else {
      fail("cannot schedule {} yet", op_name(u.op()));
    }
    return out;
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
        UOp gate = src_ctx(u, c).valid;
        if (!gate || gate == c.valid) return v[0];
        return gate.where(v[0], UOp::cnst(u.dtype(), 0));
      }
      case Op::REDUCE_AXIS: {
        std::vector<UOp> src{v[0]};
        for (const UOp& r : reduce_ranges_.at(ctx_key(u.node(), c))) src.push_back(r);
        return UOp::make(Op::REDUCE, u.dtype(), src, u.arg_as<ReduceArg>().op);
      }
      default:
        if (is_movement(u.op())) return v[0];
        return u.replace_src(v);
    }
  }

  UOp out_;
  const std::unordered_map<UOp, UOp>& buffers_;
  std::unordered_map<UOp, UOp> params_;
  std::vector<UOp> slots_;
  std::unordered_map<std::string, UOp> memo_;
  std::unordered_map<UOp, std::string> reduce_ctx_;
  std::unordered_map<UOp, bool> has_reduce_;
  std::unordered_map<std::string, std::vector<UOp>> reduce_ranges_;
  int64_t next_axis_ = 0;
};

// The device of a graph: that of its buffers, or where its last COPY went (the default device for
// a graph of constants).
std::string device_of(const UOp& u) {
  UOp b = u;
  while (b.op() != Op::BUFFER && b.op() != Op::COPY && !b.src().empty()) b = b.src(0);
  if (b.op() == Op::COPY) return b.arg_as<std::string>();
  if (b.op() == Op::BUFFER) return b.arg_as<BufferArg>().device;
  for (const UOp& x : u.toposort())
    if (x.op() == Op::BUFFER) return x.arg_as<BufferArg>().device;
  return knob_str(Knob::DEV);
}

}  // namespace

Schedule build_schedule(const std::vector<UOp>& roots) {
  Schedule sched;
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  std::vector<UOp> topo = sink.toposort();
  std::unordered_map<UOp, size_t> position;
  for (size_t i = 0; i < topo.size(); ++i) position.emplace(topo[i], i);

  // node -> the BUFFER it is materialized into
  std::unordered_map<UOp, UOp> buffers;
  std::map<size_t, UOp> pending;  // by topological position; built last-first
  auto materialize = [&](const UOp& u) {
    if (buffers.count(u)) return;
    if (u.op() == Op::ASSIGN) {
      UOp b = u.src(0);
      while (b.op() != Op::BUFFER) b = b.src(0);
      buffers.emplace(u, b);
    } else {
      std::string device = device_of(u);
      int64_t count = 1;
      for (int64_t d : max_dims(shape_of(u))) count *= d;
      buffers.emplace(u, buffer_node(device, u.dtype(), count));
    }
    pending.emplace(position.at(u), u);
  };
  for (const UOp& u : topo) {
    if (u.op() == Op::CONTIGUOUS || u.op() == Op::ASSIGN) materialize(u);
    // a copy moves a whole buffer: its source is realized first on its own device
    if (u.op() == Op::COPY) {
      materialize(u);
      if (!is_realized_view(u.src(0))) materialize(u.src(0));
    }
  }
  for (const UOp& r : roots)
    if (!is_realized_view(r)) materialize(r);

  std::vector<ScheduleItem> built;
  while (!pending.empty()) {
    auto last = std::prev(pending.end());
    UOp node = last->second;
    if (node.op() == Op::COPY) {
      pending.erase(last);
      UOp src = node.src(0);
      if (auto it = buffers.find(src); it != buffers.end()) src = it->second;
      while (src.op() != Op::BUFFER) src = src.src(0);  // a realized view
      // COPY(PARAM slot 1): slot 1's bytes into slot 0, on the destination's device
      const BufferArg& from = src.arg_as<BufferArg>();
      UOp param = UOp::make(Op::PARAM, src.dtype().ptr(), {}, ParamArg{1, "data1", 0, from.size});
      UOp ast = UOp::make(Op::COPY, node.dtype(), {param}, node.arg_as<std::string>());
      if (buffers.at(node).arg_as<BufferArg>().size > 0)
        built.push_back({ast, {buffers.at(node), src}});
      continue;
    }
    try {
      AstBuilder kb(node, buffers);
      ScheduleItem item = kb.build();
      pending.erase(last);
      int64_t count = buffers.at(node).arg_as<BufferArg>().size;
      bool empty = false;
      for (const UOp& d : shape_of(node)) empty = empty || d.is_const(0);
      if (count > 0 && !empty) built.push_back(std::move(item));
    } catch (const NeedMaterialize& m) {
      materialize(m.node);  // then rebuild this kernel with the new buffer as an input
    }
  }
  std::reverse(built.begin(), built.end());
  sched.items = std::move(built);
  for (const UOp& r : roots) {
    if (is_realized_view(r))
      sched.outputs.push_back(r);
    else if (r.op() == Op::ASSIGN)
      sched.outputs.push_back(r.src(0));
    else
      sched.outputs.push_back(buffer_view(buffers.at(r), shape_of(r)));
  }
  return sched;
}

}  // namespace ugrad
