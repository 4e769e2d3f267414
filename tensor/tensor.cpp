#include "tensor/tensor.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "base/env.h"
#include "base/float16.h"
#include "runtime/realize.h"
#include "schedule/schedule.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
namespace tensor_detail {

std::string resolve_device(const std::string& device) {
  return device.empty() ? knob_str(Knob::DEV) : device;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + (dims.size() == 1 ? ",)" : ")");
}

void check_dims(const std::vector<int64_t>& dims, std::string_view op) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) fail("{}: shape {} has a negative dim", op, dims_str(dims));
    if (__builtin_mul_overflow(count, d, &count))
      fail("{}: shape {} has more elements than fit in int64", op, dims_str(dims));
  }
}

int64_t norm_axis(int64_t axis, int64_t ndim, std::string_view op, const Shape& shape) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    fail("{}: axis {} is out of range for shape {}", op, axis, shape_str(shape));
  return a;
}

std::vector<int64_t> norm_axes(const std::vector<int64_t>& axes, const Shape& shape,
                               std::string_view op) {
  int64_t n = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(norm_axis(a, n, op, shape));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    fail("{}: repeated axis in the axes of shape {}", op, shape_str(shape));
  return out;
}

Tensor const_tensor(ConstValue v, DType dtype, const Shape& shape, const std::string& device) {
  DType from = std::holds_alternative<double>(v) ? dtypes::float64
               : std::holds_alternative<bool>(v) ? dtypes::bool_
                                                 : dtypes::int64;
  ConstValue c = cast_value(v, from, dtype);
  UOp node;
  if (auto* d = std::get_if<double>(&c))
    node = UOp::cnst(dtype, *d);
  else if (auto* b = std::get_if<bool>(&c))
    node = UOp::cnst_bool(*b);
  else
    node = UOp::cnst_int(dtype, std::get<int64_t>(c));
  Tensor t(node, device);
  return shape.empty() ? t : broadcast_to(t, shape, "const");
}

Tensor const_like(const Tensor& t, double v, DType dtype) {
  return const_tensor(v, dtype, t.shape(), t.device());
}
Tensor const_like(const Tensor& t, double v) { return const_like(t, v, t.dtype()); }

Tensor alu(Op op, DType dtype, const std::vector<Tensor>& src) {
  std::vector<UOp> nodes;
  for (const Tensor& s : src) nodes.push_back(s.node());
  UOp n = UOp::make(op, dtype, std::move(nodes));
  shape_of(n);  // validate now, so errors point at the op that made them
  return Tensor(n, src[0].device());
}

Tensor reshape_node(const Tensor& x, const Shape& shape) {
  const Shape& old = x.shape();
  if (old.size() == shape.size() && std::equal(old.begin(), old.end(), shape.begin(), dims_equal))
    return x;
  std::vector<UOp> src{x.node()};
  src.insert(src.end(), shape.begin(), shape.end());
  UOp n = UOp::make(Op::RESHAPE, x.dtype(), std::move(src));
  shape_of(n);
  return Tensor(n, x.device());
}

Tensor expand_node(const Tensor& x, const Shape& shape) {
  const Shape& old = x.shape();
  if (std::equal(old.begin(), old.end(), shape.begin(), shape.end(), dims_equal)) return x;
  std::vector<UOp> src{x.node()};
  src.insert(src.end(), shape.begin(), shape.end());
  UOp n = UOp::make(Op::EXPAND, x.dtype(), std::move(src));
  shape_of(n);
  return Tensor(n, x.device());
}

Tensor reduce_node(const Tensor& x, Op op, const std::vector<int64_t>& axes) {
  if (axes.empty()) return x;
  UOp n = UOp::make(Op::REDUCE_AXIS, x.dtype(), {x.node()}, ReduceArg{op, axes});
  shape_of(n);
  return Tensor(n, x.device());
}

Tensor broadcast_to(const Tensor& x, const Shape& shape, std::string_view op) {
  const Shape& s = x.shape();
  if (s.size() > shape.size())
    fail("{}: cannot broadcast {} to {}", op, shape_str(s), shape_str(shape));
  size_t lead = shape.size() - s.size();
  Shape padded(lead, dim(1));
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t i = 0; i < shape.size(); ++i)
    if (!padded[i].is_const(1) && !dims_equal(padded[i], shape[i]))
      fail("{}: cannot broadcast {} to {}", op, shape_str(s), shape_str(shape));
  return expand_node(reshape_node(x, padded), shape);
}

DType promote(DType a, DType b) { return strong(least_upper_dtype(a, b)); }

std::pair<Tensor, Tensor> broadcast_pair(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.device() != b.device())
    fail("{}: operands on different devices {} and {}", op, a.device(), b.device());
  Shape s = broadcast_shape(a.shape(), b.shape(), op);
  DType t = promote(a.dtype(), b.dtype());
  return {broadcast_to(a.cast(t), s, op), broadcast_to(b.cast(t), s, op)};
}

Tensor number_operand(Number n, const Tensor& like) {
  DType t = strong(least_upper_dtype(like.dtype(), n.dtype));
  return const_tensor(n.value, t, {}, like.device());
}

DType float_dtype(DType t) { return is_float(t) ? t : dtypes::float32; }

}  // namespace tensor_detail

using namespace tensor_detail;

namespace detail {
void item_size_error(const Shape& shape) {
  fail("item: tensor of shape {} does not have exactly one element", shape_str(shape));
}
}  // namespace detail

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    UOp da = i < n - a.size() ? dim(1) : a[i - (n - a.size())];
    UOp db = i < n - b.size() ? dim(1) : b[i - (n - b.size())];
    if (da.is_const(1))
      out[i] = db;
    else if (db.is_const(1) || dims_equal(da, db))
      out[i] = da;
    else
      fail("{}: shapes {} and {} do not broadcast (axis {}: {} vs {})", op, shape_str(a),
           shape_str(b), i, da.render(), db.render());
  }
  return out;
}

Tensor::Tensor(UOp node, std::string device) : state_(std::make_shared<State>()) {
  state_->node = std::move(node);
  state_->device = resolve_device(device);
}

const UOp& Tensor::raw_node() const {
  if (!state_) fail("tensor: use of an empty Tensor handle");
  return state_->node;
}

const UOp& Tensor::node() const {
  const UOp& n = raw_node();
  if (!state_->requires_grad || !NoGradScope::active()) return n;
  if (!state_->detached || state_->detached.src(0) != n)
    state_->detached = UOp::make(Op::DETACH, n.dtype(), {n});
  return state_->detached;
}
const std::string& Tensor::device() const {
  if (!state_) fail("tensor: use of an empty Tensor handle");
  return state_->device;
}
const Shape& Tensor::shape() const { return shape_of(node()); }

std::vector<int64_t> Tensor::dims() const {
  if (auto d = static_dims(shape())) return *d;
  std::vector<int64_t> out;
  for (const UOp& d : shape()) {
    UOp v = substitute_bound_values(d);
    if (!v.is_const())
      fail("tensor: shape {} has a variable without a value where static dims are needed",
           shape_str(shape()));
    out.push_back(v.const_int());
  }
  return out;
}
int64_t Tensor::size(int64_t axis) const {
  return dims()[norm_axis(axis, ndim(), "size", shape())];
}
int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims()) n *= d;
  return n;
}

Tensor Tensor::from_dim(const UOp& d, const std::string& device) {
  if (d.dtype() != dtypes::index) fail("from_dim: {} is not an index expression", d.render());
  return Tensor(d, device).cast(dtypes::int32);
}

Tensor& Tensor::realize() {
  realize_all(std::span<Tensor>(this, 1));
  return *this;
}

namespace {

// True if a BUFFER is among the node's sources. The first sources lead to one in most graphs, so
// the whole graph is walked only for graphs of constants.
bool names_a_buffer(const UOp& node) {
  for (UOp u = node;; u = u.src(0)) {
    if (u.op() == Op::BUFFER) return true;
    if (u.src().empty()) break;
  }
  std::vector<UOp> graph = node.toposort();
  return std::any_of(graph.begin(), graph.end(), [](const UOp& u) { return u.op() == Op::BUFFER; });
}

}  // namespace

void Tensor::realize_all(std::span<Tensor> tensors) {
  std::vector<UOp> roots;
  std::vector<size_t> which;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.is_realized()) continue;
    // A graph of constants names no device in its nodes: it is written into a buffer of the
    // tensor's device (else the scheduler would pick the default device).
    std::optional<std::vector<int64_t>> dims = static_dims(t.shape());
    const bool constant = dims && !names_a_buffer(t.node());
    roots.push_back(constant ? empty(*dims, t.dtype(), t.device()).assign(t).node() : t.node());
    which.push_back(i);
  }
  if (roots.empty()) return;
  std::vector<UOp> done = ugrad::realize(roots);
  if (done.size() != roots.size())
    internal_error("realize returned {} nodes for {} roots", done.size(), roots.size());
  const bool keep_graph = !grad_leaves().empty();
  for (size_t i = 0; i < which.size(); ++i) {
    State& s = *tensors[which[i]].state_;
    if (keep_graph && !s.lazy) s.lazy = s.node;  // backward() on a realized loss
    s.node = done[i];
  }
}

bool Tensor::is_realized() const { return is_realized_view(raw_node()); }

Tensor Tensor::contiguous() const {
  return Tensor(UOp::make(Op::CONTIGUOUS, dtype(), {node()}), device());
}
Tensor Tensor::detach() const { return Tensor(UOp::make(Op::DETACH, dtype(), {node()}), device()); }
Tensor Tensor::to(const std::string& dev) const {
  std::string d = resolve_device(dev);
  if (d == device()) return *this;
  return Tensor(UOp::make(Op::COPY, dtype(), {node()}, d), d);
}

std::vector<std::byte> Tensor::to_bytes() const {
  // Read at the bound values: a static shape.
  Tensor t = static_dims(shape()) ? *this : Tensor(substitute_bound_values(node()), device());
  int64_t n = t.numel();
  if (n == 0) return {};  // nothing to compute or copy
  // A view that is not the whole buffer in order (a slice, a padded or permuted view) is copied
  // into a fresh buffer first.
  if (!t.is_realized()) t.realize();
  UOp buf = realized_buffer(t.node());
  if (!buf || buf.arg_as<BufferArg>().size != n) {
    t = t.contiguous();
    t.realize();
    buf = realized_buffer(t.node());
  }
  if (!buf) internal_error("to_bytes: realize returned no buffer");
  std::vector<std::byte> bytes(static_cast<size_t>(n) * itemsize(dtype()));
  copy_out(buf, bytes);
  return bytes;
}

namespace {

// One element of `t` read from raw storage.
ConstValue decode(const std::byte* p, DType t) {
  auto rd = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (t.scalar) {
    case Scalar::Bool:
      return rd(uint8_t{}) != 0;
    case Scalar::Int8:
      return int64_t{rd(int8_t{})};
    case Scalar::Int16:
      return int64_t{rd(int16_t{})};
    case Scalar::Int32:
      return int64_t{rd(int32_t{})};
    case Scalar::Int64:
      return rd(int64_t{});
    case Scalar::UInt8:
      return int64_t{rd(uint8_t{})};
    case Scalar::UInt16:
      return int64_t{rd(uint16_t{})};
    case Scalar::UInt32:
      return int64_t{rd(uint32_t{})};
    case Scalar::UInt64:
      return static_cast<int64_t>(rd(uint64_t{}));
    case Scalar::Float16:
      return double{half_to_float(rd(uint16_t{}))};
    case Scalar::BFloat16:
      return double{bf16_to_float(rd(uint16_t{}))};
    case Scalar::Float32:
      return double{rd(float{})};
    case Scalar::Float64:
      return rd(double{});
    default:
      fail("tensor: dtype {} has no storage", to_string(t));
  }
}

}  // namespace

std::vector<double> Tensor::to_doubles() const {
  std::vector<std::byte> bytes = to_bytes();
  size_t size = itemsize(dtype());
  std::vector<double> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    ConstValue v = decode(bytes.data() + i * size, dtype());
    // uint64 values travel as bit patterns; read them as unsigned
    out[i] = dtype() == dtypes::uint64
                 ? static_cast<double>(static_cast<uint64_t>(std::get<int64_t>(v)))
                 : const_as_double(v);
  }
  return out;
}

std::vector<int64_t> Tensor::to_ints() const {
  std::vector<std::byte> bytes = to_bytes();
  size_t size = itemsize(dtype());
  std::vector<int64_t> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = const_as_int(decode(bytes.data() + i * size, dtype()));
  return out;
}

Tensor Tensor::assign(const Tensor& value) const {
  UOp base = raw_node();
  while (is_movement(base.op())) base = base.src(0);
  if (base.op() != Op::BUFFER)
    fail("assign: the target of shape {} is not a view of a realized buffer (realize it first)",
         shape_str(shape()));
  if (value.device() != device())
    fail("assign: value on {} but the target on {}", value.device(), device());
  Tensor v = broadcast_to(value.cast(dtype()), shape(), "assign");
  return Tensor(UOp::make(Op::ASSIGN, dtype(), {raw_node(), v.node()}), device());
}

Tensor Tensor::assign(Number value) const {
  return assign(const_tensor(value.value, dtype(), {}, device()));
}

}  // namespace ugrad
