// The contexts of a kernel's nodes, and the two reduce rules checked at each.
#include "schedule/kernel_walk.h"

#include <unordered_set>

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

std::vector<UOp> reshape_idx(const std::vector<UOp>& idx, const Shape& out, const Shape& in) {
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

}  // namespace

CtxKey::CtxKey(const UOp& node, const Ctx& c) {
  nodes.reserve(c.idx.size() + c.scope.size() + 4);
  nodes.push_back(node);
  nodes.insert(nodes.end(), c.idx.begin(), c.idx.end());
  nodes.emplace_back();
  nodes.insert(nodes.end(), c.scope.begin(), c.scope.end());
  nodes.emplace_back();
  nodes.push_back(c.valid);
}

size_t CtxKey::Hash::operator()(const CtxKey& k) const {
  size_t h = k.nodes.size();
  for (const UOp& u : k.nodes) h = (h ^ std::hash<UOp>()(u)) * 0x9e3779b97f4a7c15ull;
  return h;
}

Ctx KernelWalk::output_ctx() {
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
  return c;
}

Ctx KernelWalk::src_ctx(const UOp& u, const Ctx& c) const {
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

UOp KernelWalk::first_needed_buffer() {
  Ctx c = output_ctx();
  // What an ASSIGN stores is a load, a read of what another assign wrote (a view of a buffer:
  // no reduce), or computed here.
  UOp v = out_.op() == Op::ASSIGN ? out_.src(1) : out_;
  if (v != out_ && (v.op() == Op::ASSIGN || is_load(v))) return {};
  return walk(v, c, [](const UOp&, const Ctx&, const Sources&) { return UOp(); });
}

const UOp& KernelWalk::value_at(const UOp& node, const Ctx& c) const {
  return values_.at(CtxKey(node, c));
}

const std::vector<UOp>& KernelWalk::reduce_ranges(const UOp& red, const Ctx& c) const {
  return reduce_ranges_.at(CtxKey(red, c));
}

// The two reduce rules; `key` is CtxKey(u, c).
UOp KernelWalk::needs_buffer(const UOp& u, const Ctx& c, const CtxKey& key) {
  // A node holding a reduce is computed in one context per kernel: in two, its loop would run
  // twice.
  if (u.op() != Op::CONST && u.op() != Op::BUFFER && has_reduce(u)) {
    auto [it, inserted] = reduce_ctx_.emplace(u, key);
    if (!inserted && it->second != key) return u;
  }
  // Every range in scope must index a reduce, else it would be recomputed per iteration. A
  // reduce inside another reduce's loop gets a buffer too: nested, it is a whole matmul inside a
  // reduction, a kernel the code generator gives no vector lanes (a norm of a block's output ran
  // the block's down projection that way: 18 ms per Q4_K decode step). A one-hot sum (a gather)
  // is exempt from both: the code generator turns it into one load.
  if (u.op() == Op::REDUCE_AXIS && !(u == out_) && !is_one_hot_sum(u)) {
    std::unordered_set<UOp> used;
    for (const UOp& i : c.idx)
      for (const UOp& x : i.toposort())
        if (x.op() == Op::RANGE) used.insert(x);
    for (const UOp& r : c.scope)
      if (!used.count(r) || r.arg_as<RangeArg>().type == AxisType::Reduce) return u;
  }
  return {};
}

bool KernelWalk::has_reduce(const UOp& node) {
  if (auto it = has_reduce_.find(node); it != has_reduce_.end()) return it->second;
  for (const UOp& u :
       node.toposort([&](const UOp& u) { return !is_load(u) && !has_reduce_.count(u); })) {
    bool r = u.op() == Op::REDUCE_AXIS;
    for (const UOp& s : u.src()) r = r || (!is_load(s) && has_reduce_.at(s));
    has_reduce_.emplace(u, r);
  }
  return has_reduce_.at(node);
}

// The (source, context) pairs a node's value needs.
KernelWalk::Sources KernelWalk::sources(const UOp& u, const Ctx& c) {
  Sources out;
  if (is_movement(u.op())) {
    out.emplace_back(u.src(0), src_ctx(u, c));
  } else if (u.op() == Op::REDUCE_AXIS) {
    Ctx s = c;
    const Shape& in = shape_of(u.src(0));
    for (int64_t a : u.arg_as<ReduceArg>().axes) {
      UOp r = UOp::range(in[a], next_axis_++, AxisType::Reduce);
      s.idx[a] = r;
      s.scope.push_back(r);
    }
    reduce_ranges_[CtxKey(u, c)] =
        std::vector<UOp>(s.scope.begin() + c.scope.size(), s.scope.end());
    if (!(u == out_) && !is_one_hot_sum(u)) inline_reduces_.push_back(u);
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

}  // namespace ugrad
