// Movement ops: the six primitive ones (RESHAPE, PERMUTE, EXPAND, PAD, SHRINK, FLIP) with their
// argument checks, and the shapes built from them (slices, squeeze, repeat, cat, stack).
#include <algorithm>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

std::string pairs_str(const std::vector<std::pair<int64_t, int64_t>>& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i)
    out += fmt::format("{}({}, {})", i ? ", " : "", v[i].first, v[i].second);
  return out + ")";
}

}  // namespace

Tensor Tensor::reshape(const std::vector<int64_t>& new_dims) const {
  std::vector<int64_t> old = dims();
  std::vector<int64_t> out = new_dims;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0)
        fail("reshape: {} to {}: more than one -1", dims_str(old), dims_str(new_dims));
      infer = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      fail("reshape: {} to {}: negative dim", dims_str(old), dims_str(new_dims));
    } else if (__builtin_mul_overflow(known, out[i], &known)) {
      fail("reshape: {} to {}: too many elements", dims_str(old), dims_str(new_dims));
    }
  }
  int64_t n = numel();
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      fail("reshape: {} to {}: cannot infer the -1 dim", dims_str(old), dims_str(new_dims));
    out[infer] = n / known;
  } else if (known != n) {
    fail("reshape: {} to {}: element counts {} and {} differ", dims_str(old), dims_str(new_dims), n,
         known);
  }
  return reshape_node(*this, make_shape(out));
}

Tensor Tensor::reshape_to(const Shape& s) const { return reshape_node(*this, s); }

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  int64_t n = ndim();
  std::vector<int64_t> o;
  std::vector<bool> seen(n);
  bool ok = static_cast<int64_t>(order.size()) == n;
  for (int64_t a : order) {
    int64_t b = a < 0 ? a + n : a;
    if (b < 0 || b >= n || seen[b]) ok = false;
    if (!ok) break;
    seen[b] = true;
    o.push_back(b);
  }
  if (!ok)
    fail("permute: {} is not an order of the {} axes of {}", dims_str(order), n,
         shape_str(shape()));
  bool identity = true;
  for (int64_t i = 0; i < n; ++i) identity &= o[i] == i;
  if (identity) return *this;
  return Tensor(UOp::make(Op::PERMUTE, dtype(), {node()}, o), device());
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  int64_t x = norm_axis(a, ndim(), "transpose", shape()),
          y = norm_axis(b, ndim(), "transpose", shape());
  std::vector<int64_t> order(ndim());
  for (int64_t i = 0; i < ndim(); ++i) order[i] = i;
  std::swap(order[x], order[y]);
  return permute(order);
}

Tensor Tensor::expand(const std::vector<int64_t>& new_dims) const {
  const Shape& s = shape();
  if (new_dims.size() < s.size())
    fail("expand: {} to {}: fewer dims", shape_str(s), dims_str(new_dims));
  size_t lead = new_dims.size() - s.size();
  Shape out;
  for (size_t i = 0; i < new_dims.size(); ++i) {
    if (new_dims[i] == -1 && i >= lead)
      out.push_back(s[i - lead]);
    else if (new_dims[i] < 0)
      fail("expand: {} to {}: negative dim", shape_str(s), dims_str(new_dims));
    else
      out.push_back(dim(new_dims[i]));
  }
  if (auto d = static_dims(out)) check_dims(*d, "expand");
  return broadcast_to(*this, out, "expand");
}

Tensor Tensor::expand_to(const Shape& s) const { return broadcast_to(*this, s, "expand"); }

Tensor Tensor::pad(const std::vector<std::pair<int64_t, int64_t>>& pads, Number value) const {
  if (static_cast<int64_t>(pads.size()) != ndim())
    fail("pad: {} pads for shape {}", pads.size(), shape_str(shape()));
  bool any = false;
  for (auto [b, a] : pads) {
    if (b < 0 || a < 0)
      fail("pad: negative pad {} for shape {}", pairs_str(pads), shape_str(shape()));
    any |= b || a;
  }
  if (!any) return *this;
  std::vector<UOp> src{node()};
  for (auto [b, a] : pads) src.push_back(dim(b));
  for (auto [b, a] : pads) src.push_back(dim(a));
  UOp n = UOp::make(Op::PAD, dtype(), src);
  if (auto d = static_dims(shape_of(n))) check_dims(*d, "pad");
  Tensor padded(n, device());
  if (const_as_double(value.value) == 0) return padded;  // PAD fills with zeros
  // A non-zero fill: where(the padded region of ones, x, value).
  src[0] = const_tensor(true, dtypes::bool_, shape(), device()).node();
  Tensor mask(UOp::make(Op::PAD, dtypes::bool_, src), device());
  return mask.where(padded, const_tensor(value.value, dtype(), {}, device()));
}

Tensor Tensor::shrink(const std::vector<std::pair<int64_t, int64_t>>& ranges) const {
  if (static_cast<int64_t>(ranges.size()) != ndim())
    fail("shrink: {} ranges for shape {}", ranges.size(), shape_str(shape()));
  std::vector<int64_t> d = dims();
  bool whole = true;
  for (size_t i = 0; i < ranges.size(); ++i) {
    auto [s, e] = ranges[i];
    if (s < 0 || e < s || e > d[i])
      fail("shrink: range [{}, {}) is out of bounds for axis {} of {}", s, e, i,
           shape_str(shape()));
    whole &= s == 0 && e == d[i];
  }
  if (whole) return *this;
  std::vector<UOp> src{node()};
  for (auto [s, e] : ranges) src.push_back(dim(s));
  for (auto [s, e] : ranges) src.push_back(dim(e));
  return Tensor(UOp::make(Op::SHRINK, dtype(), src), device());
}

Tensor Tensor::shrink_to(const std::vector<std::pair<UOp, UOp>>& ranges) const {
  if (static_cast<int64_t>(ranges.size()) != ndim())
    fail("shrink: {} ranges for shape {}", ranges.size(), shape_str(shape()));
  std::vector<UOp> src{node()};
  for (const auto& [s, e] : ranges) src.push_back(s.cast(dtypes::index));
  for (const auto& [s, e] : ranges) src.push_back(e.cast(dtypes::index));
  UOp n = UOp::make(Op::SHRINK, dtype(), src);
  shape_of(n);  // static bounds are checked here
  return Tensor(n, device());
}

Tensor Tensor::pad_to(const std::vector<std::pair<UOp, UOp>>& pads) const {
  if (static_cast<int64_t>(pads.size()) != ndim())
    fail("pad: {} pads for shape {}", pads.size(), shape_str(shape()));
  std::vector<UOp> src{node()};
  for (const auto& [b, a] : pads) src.push_back(b.cast(dtypes::index));
  for (const auto& [b, a] : pads) src.push_back(a.cast(dtypes::index));
  for (size_t i = 1; i < src.size(); ++i)
    if (src[i].vmin() < 0) fail("pad: pad {} may be negative", src[i].render());
  UOp n = UOp::make(Op::PAD, dtype(), src);
  shape_of(n);
  return Tensor(n, device());
}

Tensor Tensor::slice(const std::vector<SliceArg>& ranges) const {
  if (static_cast<int64_t>(ranges.size()) > ndim())
    fail("slice: {} ranges for shape {}", ranges.size(), shape_str(shape()));
  std::vector<int64_t> d = dims();
  std::vector<std::pair<int64_t, int64_t>> r;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i >= ranges.size()) {
      r.emplace_back(0, d[i]);
      continue;
    }
    auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + d[i] : v, 0, d[i]); };
    int64_t s = clamp(ranges[i].start), e = clamp(ranges[i].end.value_or(d[i]));
    r.emplace_back(s, std::max(s, e));
  }
  return shrink(r);
}

Tensor Tensor::flip(std::vector<int64_t> axes) const {
  std::vector<int64_t> ax = norm_axes(axes, shape(), "flip");
  if (ax.empty()) return *this;
  return Tensor(UOp::make(Op::FLIP, dtype(), {node()}, ax), device());
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (ndim() == 0) return reshape(std::vector<int64_t>{1});
  int64_t s = norm_axis(start, ndim(), "flatten", shape()),
          e = norm_axis(end, ndim(), "flatten", shape());
  if (s > e) fail("flatten: start axis {} after end axis {}", start, end);
  std::vector<int64_t> d = dims(), out(d.begin(), d.begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= d[i];
  out.push_back(merged);
  out.insert(out.end(), d.begin() + e + 1, d.end());
  return reshape(out);
}

Tensor Tensor::squeeze(std::vector<int64_t> axes) const {
  const Shape& s = shape();
  std::vector<bool> drop(s.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < s.size(); ++i) drop[i] = s[i].is_const(1);
  } else {
    for (int64_t a : norm_axes(axes, s, "squeeze")) {
      if (!s[a].is_const(1)) fail("squeeze: axis {} of {} is not 1", a, shape_str(s));
      drop[a] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < s.size(); ++i)
    if (!drop[i]) out.push_back(s[i]);
  return reshape_node(*this, out);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int64_t a = norm_axis(axis, ndim() + 1, "unsqueeze", shape());
  Shape s = shape();
  s.insert(s.begin() + a, dim(1));
  return reshape_node(*this, s);
}

Tensor Tensor::repeat(const std::vector<int64_t>& repeats) const {
  if (static_cast<int64_t>(repeats.size()) < ndim())
    fail("repeat: {} repeats for shape {}", repeats.size(), shape_str(shape()));
  for (int64_t r : repeats)
    if (r < 0) fail("repeat: negative count in {}", dims_str(repeats));
  std::vector<int64_t> d = dims();
  d.insert(d.begin(), repeats.size() - d.size(), 1);
  // (d0, d1) -> (1, d0, 1, d1) -> (r0, d0, r1, d1) -> (r0*d0, r1*d1)
  std::vector<int64_t> unit, big, out;
  for (size_t i = 0; i < d.size(); ++i) {
    unit.insert(unit.end(), {1, d[i]});
    big.insert(big.end(), {repeats[i], d[i]});
    out.push_back(repeats[i] * d[i]);
  }
  check_dims(out, "repeat");
  return reshape(unit).expand(big).reshape(out);
}

Tensor Tensor::repeat_interleave(int64_t n, int64_t axis) const {
  int64_t a = norm_axis(axis, ndim(), "repeat_interleave", shape());
  if (n < 0) fail("repeat_interleave: negative count {}", n);
  std::vector<int64_t> d = dims(), big = d, out = d;
  big.insert(big.begin() + a + 1, n);
  out[a] *= n;
  return unsqueeze(a + 1).expand(big).reshape(out);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("cat: no tensors");
  const Tensor& first = tensors[0];
  int64_t a = norm_axis(axis, first.ndim(), "cat", first.shape());
  std::vector<int64_t> d0 = first.dims();
  int64_t total = 0;
  DType t = first.dtype();
  for (const Tensor& x : tensors) {
    std::vector<int64_t> d = x.dims();
    bool ok = d.size() == d0.size();
    for (size_t i = 0; ok && i < d.size(); ++i) ok = static_cast<int64_t>(i) == a || d[i] == d0[i];
    if (!ok) fail("cat: shapes {} and {} differ outside axis {}", dims_str(d0), dims_str(d), a);
    if (x.device() != first.device())
      fail("cat: tensors on different devices {} and {}", first.device(), x.device());
    total += d[a];
    t = promote(t, x.dtype());
  }
  // Each part padded to the full length at its offset; the parts are then added (or OR-ed).
  Tensor out;
  int64_t offset = 0;
  for (const Tensor& x : tensors) {
    std::vector<std::pair<int64_t, int64_t>> pads(d0.size(), {0, 0});
    int64_t len = x.size(a);
    pads[a] = {offset, total - offset - len};
    offset += len;
    Tensor part = x.cast(t).pad(pads);
    out = !out.defined() ? part : is_bool(t) ? (out | part) : out + part;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("stack: no tensors");
  int64_t a = norm_axis(axis, tensors[0].ndim() + 1, "stack", tensors[0].shape());
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(a));
  return cat(parts, a);
}

}  // namespace ugrad
