#include "llm/quant/block_exprs.h"

#include <map>
#include <mutex>

#include "base/error.h"
#include "llm/quant/blocks.h"

namespace ugrad::llm {

Tensor upper_half(const std::vector<int64_t>& dims, size_t axis, const std::string& device) {
  std::vector<int64_t> half(dims.size(), 1);
  std::vector<std::pair<int64_t, int64_t>> pads(dims.size(), {0, 0});
  half[axis] = dims[axis] / 2;
  pads[axis] = {dims[axis] / 2, 0};
  return Tensor::full(half, true, dtypes::bool_, device).pad(pads).expand(dims);
}

Tensor shift_upper(const Tensor& x, size_t axis, int shift) {
  return upper_half(x.dims(), axis, x.device()).where(idiv(x, int64_t{1} << shift), x);
}

Tensor constant_table(const std::string& name, const std::string& device,
                      const std::function<Tensor(const std::string& device)>& make) {
  static std::mutex mutex;
  static auto* tables = new std::map<std::pair<std::string, std::string>, Tensor>();
  std::lock_guard lock(mutex);
  Tensor& t = (*tables)[{name, device}];
  if (!t.defined()) t = make(device).realize();
  return t;
}

// Read from a table: x86 converts an int to a float with two ALU uops and broadcasts it to a
// vector with a third, while a broadcast load from a table uses no ALU port (the gather becomes
// one load, see gather_load.h).
Tensor six_bit_floats(const Tensor& v) {
  const Tensor table = constant_table("0..63", v.device(), [](const std::string& device) {
    std::vector<float> t(64);
    for (int i = 0; i < 64; ++i) t[i] = static_cast<float>(i);
    return Tensor::from_vector(t, {64, 1}, dtypes::float32, device);
  });
  return table.embedding(v.cast(dtypes::int32)).reshape(v.dims());
}

namespace {

// Plane p's byte of every index of f as (n, axes...) uint8: the axes it steps through, in order of
// decreasing byte stride, each stride a multiple of the next, are a view of its span; the others
// are broadcast.
Tensor plane_bytes(const Blocks& b, const Field& f, const BitPlane& p, size_t rank) {
  const int64_t n = b.n();
  std::vector<int64_t> stepped, view{n}, full{n};
  for (size_t k = 0; k < rank; ++k) {
    full.push_back(f.axes[k]);
    view.push_back(p.byte_stride[k] ? f.axes[k] : 1);
    if (p.byte_stride[k]) stepped.push_back(static_cast<int64_t>(k));
  }
  if (stepped.empty()) return b.bytes(p.offset, 1).reshape(view).expand(full);
  // (n, r0 * s0) -> (n, r0, s0) -> (n, r0, s0 / s1, s1) shrunk to (n, r0, r1, s1) -> ...
  const int64_t s0 = p.byte_stride[stepped[0]];
  Tensor t = b.bytes(p.offset, f.axes[stepped[0]] * s0);
  std::vector<int64_t> dims{n, f.axes[stepped[0]], s0};
  t = t.reshape(dims);
  for (size_t i = 1; i <= stepped.size(); ++i) {
    const int64_t last = dims.back();
    const int64_t s = i < stepped.size() ? p.byte_stride[stepped[i]] : 1;
    const int64_t r = i < stepped.size() ? f.axes[stepped[i]] : 1;
    if (s <= 0 || last % s != 0 || (last / s) < r)
      fail("field_tensor: a plane at byte {} is not a view of its bytes", p.offset);
    dims.back() = last / s;
    dims.push_back(s);
    t = t.reshape(dims);
    std::vector<std::pair<int64_t, int64_t>> keep;
    for (int64_t d : dims) keep.push_back({0, d});
    keep[keep.size() - 2] = {0, r};
    t = t.shrink(keep);
    dims[dims.size() - 2] = r;
  }
  // (n, r0, r1, ..., 1, 1): drop the trailing 1s, then the broadcast axes' 1s go in.
  return t.reshape(view).expand(full);
}

// Plane p's bits of every index of f as (n, axes...) in `work`, at bit 0 and masked. The bits'
// shift moves per half of each axis that steps it: a choice per element (shift_upper), or with
// `concat`, where the outermost axis alone moves it, the two halves of the field, one shift each,
// concatenated. A 1-bit plane whose innermost axis moves the bit (each vector lane a different
// bit) is tested against a mask per element instead: vector lanes have no cheap shift by a
// per-lane amount.
Tensor plane_bits(const Blocks& b, const Field& f, const BitPlane& p, size_t rank, DType work,
                  bool concat) {
  Tensor x = plane_bytes(b, f, p, rank);
  if (work != dtypes::uint8) x = x.cast(work);
  const int64_t mask = (int64_t{1} << p.bits) - 1;
  if (p.bits == 1 && p.shift_step[rank - 1]) {
    std::vector<int64_t> dims{1};
    std::vector<uint8_t> bits{uint8_t(1 << p.shift)};  // row-major over the stepping axes
    for (size_t a = 0; a < rank; ++a) {
      dims.push_back(p.shift_step[a] ? 2 : 1);
      if (!p.shift_step[a]) continue;
      std::vector<uint8_t> next;
      for (uint8_t v : bits) next.insert(next.end(), {v, uint8_t(v << p.shift_step[a])});
      bits = std::move(next);
    }
    const Tensor m = Tensor::from_vector(bits, dims, dtypes::uint8, b.device());
    return (x & m).ne(0).cast(work);
  }
  if (p.shift) x = idiv(x, int64_t{1} << p.shift);
  bool above = p.shift + p.bits < 8;  // bits above the plane's in x
  int steps = 0;
  for (size_t a = 0; a < rank; ++a) steps += p.shift_step[a] != 0;
  for (size_t a = 0; a < rank; ++a) {
    const int step = p.shift_step[a];
    if (!step) continue;
    if (f.axes[a] != 2) fail("field_tensor: a shift steps along an axis of {}, not 2", f.axes[a]);
    if (a > 0 || steps > 1 || !concat) {
      x = shift_upper(x, a + 1, step);
      above = true;
      continue;
    }
    std::vector<std::pair<int64_t, int64_t>> first;
    for (int64_t d : x.dims()) first.push_back({0, d});
    first[1] = {0, 1};
    const Tensor lo = x.shrink(first);
    const Tensor hi = idiv(lo, int64_t{1} << step);
    x = cat({above ? lo & mask : lo, p.shift + step + p.bits < 8 ? hi & mask : hi}, 1);
    above = false;
  }
  return above ? x & mask : x;
}

}  // namespace

Tensor field_tensor(const Blocks& b, const Field& f, DType work, bool concat) {
  const auto rank = static_cast<size_t>(f.rank());
  Tensor v;
  for (int k = 0; k < f.n_planes; ++k) {
    const BitPlane& p = f.planes[k];
    Tensor x = plane_bits(b, f, p, rank, work, concat);
    if (p.place) x = x * (int64_t{1} << p.place);
    v = v.defined() ? v + x : x;
  }
  if (f.is_signed) v = v.bitcast(dtypes::int8);
  return f.bias ? v.cast(dtypes::int32) - f.bias : v;
}

}  // namespace ugrad::llm
