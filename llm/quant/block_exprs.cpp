#include "llm/quant/block_exprs.h"

#include <map>
#include <mutex>

#include "llm/quant/blocks.h"

namespace ugrad::llm {

Tensor bits(const Tensor& x, int shift, int64_t mask) {
  return idiv(x, int64_t{1} << shift) & mask;
}

Tensor spread(const Tensor& s, int64_t per) {
  auto d = s.dims();
  return s.reshape({d[0], d[1], 1}).expand({d[0], d[1], per}).reshape({d[0], d[1] * per});
}

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
std::pair<Tensor, Tensor> six_bit_floats(const std::pair<Tensor, Tensor>& ab) {
  const Tensor table = constant_table("0..63", ab.first.device(), [](const std::string& device) {
    std::vector<float> v(64);
    for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(i);
    return Tensor::from_vector(v, {64, 1}, dtypes::float32, device);
  });
  auto of = [&](const Tensor& t) { return table.embedding(t).reshape(t.dims()); };
  return {of(ab.first), of(ab.second)};
}

Tensor int8_floats(const Tensor& bytes) {
  const Tensor table = constant_table("int8", bytes.device(), [](const std::string& device) {
    std::vector<float> v(256);
    for (int i = 0; i < 256; ++i) v[i] = static_cast<float>(static_cast<int8_t>(i));
    return Tensor::from_vector(v, {256, 1}, dtypes::float32, device);
  });
  return table.embedding(bytes.cast(dtypes::int32)).reshape(bytes.dims());
}

std::pair<Tensor, Tensor> scales_mins_k4(const Blocks& b, size_t off) {
  // Bit math in int32: on bytes x86 spends two more instructions per scale (a copy and a
  // re-extension before the conversion to float).
  auto word = [&](size_t at) { return b.bytes(at, 4).cast(dtypes::int32); };
  Tensor lo_sc = word(off), lo_m = word(off + 4), hi = word(off + 8);
  Tensor sc = cat({lo_sc & 63, (hi & 15) + bits(lo_sc, 6, 3) * 16}, 1);
  Tensor m = cat({lo_m & 63, idiv(hi, 16) + bits(lo_m, 6, 3) * 16}, 1);
  return {sc, m};
}

Tensor iq4_xs_scales(const Blocks& b) {
  // ls_j = nibble j%2 of scales_l[j/2] | bits 2j.. of scales_h << 4, for j = 4j2 + 2j1 + j0:
  // shifts chosen per bit of j (no cat, no division by a loaded divisor).
  const int64_t n = b.n();
  const std::vector<int64_t> sub{n, 2, 2, 2};  // (j2, j1, j0)
  Tensor sl = b.bytes(iq4_xs::kScalesL, 4).reshape({n, 2, 2, 1}).expand(sub);
  Tensor sh = b.u16(iq4_xs::kScalesH).reshape({n, 1, 1, 1}).expand(sub);
  Tensor lo = shift_upper(sl, 3, 4) & 15;
  Tensor hi = shift_upper(shift_upper(shift_upper(sh, 1, 8), 2, 4), 3, 2) & 3;
  Tensor ls = lo.cast(dtypes::int32) + hi.cast(dtypes::int32) * 16;
  return (ls - iq4_xs::kScaleOffset).cast(dtypes::float32).reshape({n, 8});
}

}  // namespace ugrad::llm
