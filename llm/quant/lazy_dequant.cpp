#include "llm/quant/lazy_dequant.h"

#include <set>

#include "base/error.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/layout.h"

namespace ugrad::llm {
namespace {

// table[q] for a 4-bit index tensor, as a tree of selects on the bits of q (bit 0 picks within
// pairs of levels, bit 3 between halves): 15 selects and 4 bit tests, vectorizable, no gather.
Tensor lookup16(const Tensor& q, const int8_t (&table)[16]) {
  std::vector<Tensor> level;
  for (int8_t v : table)
    level.push_back(Tensor::scalar(static_cast<double>(v), dtypes::float32, q.device()));
  for (int bit = 0; bit < 4; ++bit) {
    Tensor set = (q & (1 << bit)).ne(0);
    std::vector<Tensor> next;
    for (size_t k = 0; k + 1 < level.size(); k += 2)
      next.push_back(set.where(level[k + 1], level[k]));
    level = std::move(next);
  }
  return level[0];
}

// The super-scale D of every block: (n, 1) float32.
Tensor super_scales(const Blocks& b, const BlockLayout& l) {
  switch (l.d_kind) {
    case ScaleKind::F16:
      return b.f16(l.d);
    case ScaleKind::F32:
      return b.u32(l.d).bitcast(dtypes::float32);
    case ScaleKind::E8M0Half: {
      // 2^(e-128) as float bits: (e-1) << 23 for e >= 2; e < 2 gives 2^-127, 2^-126 (subnormal).
      Tensor e = b.bytes(l.d, 1).cast(dtypes::uint32);
      Tensor normal = ((e - 1) * (int64_t{1} << 23)).bitcast(dtypes::float32);
      Tensor sub = (Tensor::scalar(int64_t{0x00200000}, dtypes::uint32, e.device()) * (e + 1))
                       .bitcast(dtypes::float32);
      return e.lt(2).where(sub, normal);
    }
  }
  fail("dequantize_lazy: a super-scale of unknown kind");
}

// A field of sub-block values as float32 (n, subs): unsigned 6-bit fields (two planes) read from
// a table of 0..63 (x86 converts an int to a float with two ALU uops, a table load uses no ALU
// port).
Tensor field_floats(const Blocks& b, const Field& f) {
  const Tensor v = field_tensor(b, f).reshape({b.n(), f.count()});
  if (f.n_planes == 2 && !f.bias && f.planes[0].bits + f.planes[1].bits == 6)
    return six_bit_floats(v);
  return v.cast(dtypes::float32);
}

// Values per sub-block, (n, subs), over every element of the quant axes `dims` (n, axes...): a
// broadcast where a sub-block is whole trailing axes; where it is half of the innermost axis, a
// choice between two broadcasts per half (a load per lane group, not a gather).
Tensor per_element(const Tensor& v, const std::vector<int64_t>& dims, int64_t sub_block) {
  std::vector<int64_t> shape(dims);
  int64_t inner = 1;
  size_t k = dims.size();
  while (k > 1 && inner < sub_block) inner *= dims[--k], shape[k] = 1;
  if (inner == sub_block) return v.reshape(shape).expand(dims);
  const size_t last = dims.size() - 1;
  if (k != last || dims[last] != 2 * sub_block)
    fail("dequantize_lazy: sub-blocks of {} over quant axes ending in {}", sub_block, dims[last]);
  shape[last] = 2;
  const Tensor halves = v.reshape(shape);
  std::vector<std::pair<int64_t, int64_t>> first, second;
  for (size_t a = 0; a < shape.size(); ++a) {
    first.push_back({0, shape[a]});
    second.push_back({0, shape[a]});
  }
  first[last] = {0, 1};
  second[last] = {1, 2};
  return upper_half(dims, last, v.device())
      .where(halves.shrink(second).expand(dims), halves.shrink(first).expand(dims));
}

// Formats whose quants are taken apart in int32: x86 widens 16 bytes straight from memory and
// masks or shifts the words (Q4_K's matvec ran 4-10% faster than on bytes; Q5_K's, its high
// bits added on bytes, 15% slower).
const std::set<GgmlType> kWideQuants{GgmlType::Q4_K};

// The layout's value rule over every block: D * scale * level + M * min, (n, block elements).
Tensor layout_values(const Blocks& b, const BlockLayout& l) {
  const Tensor q =
      field_tensor(b, l.quant, kWideQuants.count(l.type) ? dtypes::int32 : dtypes::uint8, true);
  const std::vector<int64_t> dims = q.dims();
  std::vector<int64_t> ones(dims.size(), 1);
  ones[0] = b.n();
  const Tensor level = l.levels == Levels::Integer
                           ? q.cast(dtypes::float32)
                           : lookup16(q, l.levels == Levels::IQ4NL ? kIQ4NLValues : kMXFP4Values);
  const Tensor d = super_scales(b, l);
  const Tensor scale = l.scale.n_planes
                           ? per_element(d * field_floats(b, l.scale), dims, l.sub_block)
                           : d.reshape(ones).expand(dims);
  Tensor y = scale * level;
  if (l.m >= 0) {
    const Tensor m = l.min_sign < 0 ? -b.f16(l.m) : b.f16(l.m);
    y = y + (l.min.n_planes ? per_element(m * field_floats(b, l.min), dims, l.sub_block)
                            : m.reshape(ones).expand(dims));
  }
  return y.reshape({b.n(), l.quant.count()});
}

}  // namespace

bool can_dequantize_lazy(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 ||
         block_layout(type);
}

Tensor dequantize_lazy(const Tensor& raw, GgmlType type, const std::vector<int64_t>& shape) {
  const QuantFormat& f = format_of(type);
  if (!can_dequantize_lazy(type)) fail("dequantize_lazy: {} is not supported", f.name);
  if (raw.dtype() != dtypes::uint8)
    fail("dequantize_lazy {}: raw bytes must be uint8, got {}", f.name, to_string(raw.dtype()));
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel % f.block_size != 0)
    fail("dequantize_lazy {}: {} elements are not a multiple of the block size {}", f.name, numel,
         f.block_size);
  int64_t n_blocks = numel / f.block_size;
  int64_t want = n_blocks * f.block_bytes;
  if (raw.numel() != want)
    fail("dequantize_lazy {}: {} elements need {} bytes, got {}", f.name, numel, want, raw.numel());
  if (n_blocks == 0) return Tensor::zeros(shape, dtypes::float32, raw.device());
  Blocks b(raw.reshape({n_blocks, static_cast<int64_t>(f.block_bytes)}));
  if (const BlockLayout* l = block_layout(type)) return layout_values(b, *l).reshape(shape);
  if (type == GgmlType::F32) return b.u32(0).bitcast(dtypes::float32).reshape(shape);
  const Tensor h = b.u16(0);
  return (type == GgmlType::F16 ? h.bitcast(dtypes::float16).cast(dtypes::float32)
                                : (h.cast(dtypes::uint32) * 65536).bitcast(dtypes::float32))
      .reshape(shape);
}

}  // namespace ugrad::llm
