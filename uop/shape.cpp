#include "uop/shape.h"

#include <atomic>

#include <fmt/format.h>

#include "base/error.h"
#include "uop/symbolic.h"

namespace ugrad {

UOp dim(int64_t n) { return UOp::cnst_int(dtypes::index, n); }

Shape make_shape(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(dim(d));
  return s;
}

std::optional<std::vector<int64_t>> static_dims(const Shape& s) {
  std::vector<int64_t> out;
  for (const UOp& d : s) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.const_int());
  }
  return out;
}

std::vector<int64_t> max_dims(const Shape& s) {
  std::vector<int64_t> out;
  for (const UOp& d : s) out.push_back(d.vmax());
  return out;
}

UOp prod(const Shape& s) {
  UOp p = dim(1);
  for (const UOp& d : s) {
    if (p.is_const() && d.is_const())
      p = dim(p.const_int() * d.const_int());
    else if (p.is_const(1))
      p = d;
    else if (!d.is_const(1))
      p = p * d;
  }
  return p;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].render();
  return out + (s.size() == 1 ? ",)" : ")");
}

bool dims_equal(const UOp& a, const UOp& b) {
  return a == b || (a.is_const() && b.is_const() && a.const_int() == b.const_int());
}

namespace {

// Dim arithmetic: constants fold directly, symbolic results go through the symbolic rules (so
// (start_pos + T) - start_pos is T).
UOp dim_add(const UOp& a, const UOp& b) {
  if (a.is_const() && b.is_const()) return dim(a.const_int() + b.const_int());
  if (b.is_const(0)) return a;
  if (a.is_const(0)) return b;
  return simplify(a + b);
}
UOp dim_sub(const UOp& a, const UOp& b) {
  if (a.is_const() && b.is_const()) return dim(a.const_int() - b.const_int());
  if (b.is_const(0)) return a;
  return simplify(a - b);
}

Shape tail(const UOp& u, size_t from, size_t n) {
  if (u.src().size() < from + n)
    internal_error("{} has {} sources, expected {}", op_name(u.op()), u.src().size(), from + n);
  return Shape(u.src().begin() + from, u.src().begin() + from + n);
}

Shape infer(const UOp& u) {
  auto in = [&](size_t i) -> const Shape& { return shape_of(u.src(i)); };
  switch (u.op()) {
    case Op::BUFFER:
      return {dim(u.arg_as<BufferArg>().size)};
    case Op::CONST:
    case Op::PARAM:
      return {};
    case Op::RANGE:
      return {u.src(0)};
    case Op::RESHAPE: {
      Shape out(u.src().begin() + 1, u.src().end());
      UOp a = prod(in(0)), b = prod(out);
      if (a.is_const() && b.is_const() && a.const_int() != b.const_int())
        fail("reshape from {} to {}: element counts differ", shape_str(in(0)), shape_str(out));
      return out;
    }
    case Op::EXPAND: {
      const Shape& x = in(0);
      Shape out(u.src().begin() + 1, u.src().end());
      if (out.size() != x.size())
        fail("expand {} to {}: ranks differ", shape_str(x), shape_str(out));
      for (size_t i = 0; i < x.size(); ++i)
        if (!x[i].is_const(1) && !dims_equal(x[i], out[i]))
          fail("expand {} to {}: axis {} is neither 1 nor equal", shape_str(x), shape_str(out), i);
      return out;
    }
    case Op::PERMUTE: {
      const Shape& x = in(0);
      const auto& order = u.arg_as<std::vector<int64_t>>();
      std::vector<bool> seen(x.size());
      if (order.size() != x.size()) fail("permute of {} by {} axes", shape_str(x), order.size());
      Shape out;
      for (int64_t a : order) {
        if (a < 0 || a >= static_cast<int64_t>(x.size()) || seen[a])
          fail("permute of {}: invalid order", shape_str(x));
        seen[a] = true;
        out.push_back(x[a]);
      }
      return out;
    }
    case Op::PAD:
    case Op::SHRINK: {
      const Shape& x = in(0);
      Shape lo = tail(u, 1, x.size()), hi = tail(u, 1 + x.size(), x.size());
      Shape out;
      for (size_t i = 0; i < x.size(); ++i) {
        if (u.op() == Op::PAD) {
          out.push_back(dim_add(dim_add(x[i], lo[i]), hi[i]));
        } else {
          if (lo[i].is_const() && hi[i].is_const() && x[i].is_const() &&
              (lo[i].const_int() < 0 || hi[i].const_int() < lo[i].const_int() ||
               hi[i].const_int() > x[i].const_int()))
            fail("shrink of {} on axis {} to [{}, {}) is out of range", shape_str(x), i,
                 lo[i].const_int(), hi[i].const_int());
          out.push_back(dim_sub(hi[i], lo[i]));
        }
      }
      return out;
    }
    case Op::REDUCE_AXIS: {
      Shape out = in(0);
      for (int64_t a : u.arg_as<ReduceArg>().axes) {
        if (a < 0 || a >= static_cast<int64_t>(out.size()))
          fail("reduce of {} over axis {}", shape_str(out), a);
        out[a] = dim(1);
      }
      return out;
    }
    case Op::ASSIGN:
    case Op::AFTER:  // a bound variable, or what a hand-written kernel wrote into a buffer view
      return in(0);
    case Op::KERNEL:  // a launch: its outputs are the AFTERs over it
      return {};
    default:
      if (u.src().empty()) internal_error("shape_of: {} has no tensor shape", op_name(u.op()));
      // Elementwise and pass-through ops: every source has the output's shape.
      const Shape& s = in(0);
      for (size_t i = 1; i < u.src().size(); ++i) {
        const Shape& t = in(i);
        bool same = t.size() == s.size();
        for (size_t j = 0; same && j < s.size(); ++j) same = dims_equal(s[j], t[j]);
        if (!same) fail("{} of shapes {} and {}", op_name(u.op()), shape_str(s), shape_str(t));
      }
      return s;
  }
}

}  // namespace

const Shape& shape_of(const UOp& u) {
  const UOpNode* n = u.node();
  if (Shape* s = n->shape.load(std::memory_order_acquire)) return *s;
  // Fill sources first, iteratively, so a deep graph never recurses deeply.
  auto uncached = [](const UOp& x) { return x.node()->shape.load() == nullptr; };
  for (const UOp& x : u.toposort(uncached)) {
    if (x.node()->shape.load()) continue;
    auto* s = new Shape(infer(x));
    Shape* expected = nullptr;
    if (!x.node()->shape.compare_exchange_strong(expected, s)) delete s;
  }
  return *n->shape.load(std::memory_order_acquire);
}

}  // namespace ugrad

namespace ugrad {
namespace {
std::atomic<int64_t> g_next_buffer_id{1};
}

UOp buffer_node(const std::string& device, DType dtype, int64_t count) {
  if (count < 0) fail("buffer of {} elements on {}", count, device);
  return UOp::make(Op::BUFFER, dtype, {}, BufferArg{g_next_buffer_id++, count, device});
}

int64_t next_buffer_id() { return g_next_buffer_id.load(); }
}  // namespace ugrad
