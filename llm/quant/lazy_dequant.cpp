#include "llm/quant/lazy_dequant.h"

#include <functional>
#include <map>

#include "base/error.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"

namespace ugrad::llm {
namespace {

// Q4_0-ordered nibbles of a (n, 16) byte tensor: low nibbles are elements 0..15, high 16..31.
Tensor nibbles(const Tensor& qs) { return cat({qs & 15, idiv(qs, 16)}, 1); }

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

Tensor q8_0(const Blocks& b) {
  return b.bytes(q8_0::kQs, kQK).bitcast(dtypes::int8).cast(dtypes::float32) * b.f16(q8_0::kD);
}

Tensor q4_0(const Blocks& b) {
  Tensor q = nibbles(b.bytes(q4_0::kQs, kQK / 2)).cast(dtypes::int32) - q4_0::kOffset;
  return q.cast(dtypes::float32) * b.f16(q4_0::kD);
}

Tensor q4_1(const Blocks& b) {
  Tensor q = nibbles(b.bytes(q4_1::kQs, kQK / 2)).cast(dtypes::float32);
  return b.f16(q4_1::kD) * q + b.f16(q4_1::kM);
}

// 5th bits of the 32 elements from a u32 qh: bit e belongs to element e.
Tensor fifth_bits(const Blocks& b, size_t qh_off) {
  Tensor qh = b.bytes(qh_off, 4).reshape({b.n(), 4, 1}).expand({b.n(), 4, 8});
  Tensor pow2 = Tensor::from_vector<uint8_t>({1, 2, 4, 8, 16, 32, 64, 128}, {1, 1, 8},
                                             dtypes::uint8, qh.device());
  // A mask test, not a division: vector lanes have no cheap division by a loaded divisor.
  return (qh & pow2).ne(0).cast(dtypes::uint8).reshape({b.n(), kQK});
}

Tensor q5_0(const Blocks& b) {
  Tensor q = nibbles(b.bytes(q5_0::kQs, kQK / 2)) + fifth_bits(b, q5_0::kQh) * 16;
  return (q.cast(dtypes::int32) - q5_0::kOffset).cast(dtypes::float32) * b.f16(q5_0::kD);
}

Tensor q5_1(const Blocks& b) {
  Tensor q =
      (nibbles(b.bytes(q5_1::kQs, kQK / 2)) + fifth_bits(b, q5_1::kQh) * 16).cast(dtypes::float32);
  return b.f16(q5_1::kD) * q + b.f16(q5_1::kM);
}

Tensor iq4_nl(const Blocks& b) {
  return lookup16(nibbles(b.bytes(iq4_nl::kQs, kQK / 2)), kIQ4NLValues) * b.f16(iq4_nl::kD);
}

Tensor mxfp4(const Blocks& b) {
  // 2^(e-128) as float bits: (e-1) << 23 for e >= 2; e < 2 gives 2^-127, 2^-126 (subnormal).
  Tensor e = b.bytes(mxfp4::kE, 1).cast(dtypes::uint32);
  Tensor normal = ((e - 1) * (int64_t{1} << 23)).bitcast(dtypes::float32);
  Tensor sub = (Tensor::scalar(int64_t{0x00200000}, dtypes::uint32, e.device()) * (e + 1))
                   .bitcast(dtypes::float32);
  Tensor d = e.lt(2).where(sub, normal);
  return lookup16(nibbles(b.bytes(mxfp4::kQs, kQK / 2)), kMXFP4Values) * d;
}

// The K formats' element axes (n, 2, 2, 2, 32): element 128a + 64b + 32c + l of a super-block.
std::vector<int64_t> k_axes(int64_t n) { return {n, 2, 2, 2, 32}; }

// Bit 4a + 2b + c (= e/32) of byte l (= e%32) of the 32 bytes at off, over k_axes: Q5_K's qh,
// Q3_K's hmask. Shifts chosen per bit of e/32, constants once the sub-block is known (no table
// load).
Tensor bit_of_32(const Blocks& b, size_t off) {
  Tensor x = b.bytes(off, 32).reshape({b.n(), 1, 1, 1, 32}).expand(k_axes(b.n()));
  return shift_upper(shift_upper(shift_upper(x, 1, 4), 2, 2), 3, 1) & 1;
}

// Bits 2(2b + c).. of byte 32a + l of the 64 bytes at off, over k_axes: Q2_K's and Q3_K's quants,
// Q6_K's high bits. One byte load whose offset is affine in l, so vector lanes along l read
// contiguous bytes.
Tensor two_bits(const Blocks& b, size_t off) {
  Tensor x = b.bytes(off, 64).reshape({b.n(), 2, 1, 1, 32}).expand(k_axes(b.n()));
  return shift_upper(shift_upper(x, 2, 4), 3, 2) & 3;
}

// A value per sub-block of 16, (n, 16), spread over k_axes: sub-block 8a + 4b + 2c + l/16, a
// choice between two scalars per 32 (a load per lane group, not a gather).
Tensor per_sixteen(const Tensor& v) {
  const int64_t n = v.size(0);
  const std::vector<int64_t> dims = k_axes(n);
  Tensor s = v.reshape({n, 2, 2, 2, 2});
  Tensor first = s.shrink({{0, n}, {0, 2}, {0, 2}, {0, 2}, {0, 1}}).expand(dims);
  Tensor second = s.shrink({{0, n}, {0, 2}, {0, 2}, {0, 2}, {1, 2}}).expand(dims);
  return upper_half(dims, 4, v.device()).where(second, first);
}

// Q4_K/Q5_K 4-bit quants: group g (64 elements) takes 32 bytes, low nibbles first: (n, 256), with
// the bit math done in `t`. Q4_K's in int32: x86 widens 16 bytes straight from memory and masks
// or shifts the words (3 ALU uops per 32 nibbles, on bytes 4: a Q4_K matvec ran 4-10% faster);
// Q5_K's stays on bytes (its high bits are added there; in int32 it ran 15% slower).
Tensor k_nibbles(const Blocks& b, size_t qs_off, DType t) {
  Tensor qs = b.bytes(qs_off, 128).reshape({b.n(), 4, 1, 32}).cast(t);
  return cat({qs & 15, idiv(qs, 16)}, 2).reshape({b.n(), kQK_K});
}

// Q4_K/Q5_K per element (n, 256): the scale d * sc and the offset -dmin * m of its sub-block
// (the layout's fields). The offset is added (x - y is x + -y exactly): subtracted, x86 negated
// it once per sub-block.
std::pair<Tensor, Tensor> scale_offset_k4(const Blocks& b, GgmlType type) {
  const BlockLayout& l = *block_layout(type);
  auto [sc, m] = six_bit_floats(
      {field_tensor(b, l.scale).cast(dtypes::int32), field_tensor(b, l.min).cast(dtypes::int32)});
  return {spread(b.f16(l.d) * sc, 32), spread(-b.f16(l.m) * m, 32)};
}

Tensor q4_k(const Blocks& b) {
  auto [d, dm] = scale_offset_k4(b, GgmlType::Q4_K);
  return d * k_nibbles(b, q4_k::kQs, dtypes::int32).cast(dtypes::float32) + dm;
}

Tensor q5_k(const Blocks& b) {
  auto [d, dm] = scale_offset_k4(b, GgmlType::Q5_K);
  // Sub-block j takes bit j of qh[l].
  Tensor high = bit_of_32(b, q5_k::kQh).reshape({b.n(), kQK_K}) * 16;
  return d * (k_nibbles(b, q5_k::kQs, dtypes::uint8) + high).cast(dtypes::float32) + dm;
}

// Q2_K: element e of sub-block e/16: d*(sc & 15) * q - dmin*(sc >> 4), the offset added as in
// Q4_K.
Tensor q2_k(const Blocks& b) {
  const BlockLayout& l = *block_layout(GgmlType::Q2_K);
  Tensor d = b.f16(q2_k::kD) * field_tensor(b, l.scale).cast(dtypes::float32);
  Tensor dm = -b.f16(q2_k::kDmin) * field_tensor(b, l.min).cast(dtypes::float32);
  Tensor q = two_bits(b, q2_k::kQs).cast(dtypes::float32);
  return (per_sixteen(d) * q + per_sixteen(dm)).reshape({b.n(), kQK_K});
}

// Q3_K: d*(ls - 32) * (q - 4), q = two_bits | hmask bit << 2.
Tensor q3_k(const Blocks& b) {
  const Tensor ls = field_tensor(b, block_layout(GgmlType::Q3_K)->scale);
  Tensor d = b.f16(q3_k::kD) * ls.cast(dtypes::float32);
  Tensor q = two_bits(b, q3_k::kQs) + bit_of_32(b, q3_k::kHmask) * 4;
  return (per_sixteen(d) * (q.cast(dtypes::int32) - q3_k::kOffset).cast(dtypes::float32))
      .reshape({b.n(), kQK_K});
}

Tensor q6_k(const Blocks& b) {
  // Element 128h + 32(2qhi + qlo) + l (k_axes h, qhi, qlo, l) is 6 bits: the qhi-th nibble of
  // ql[64h + 32qlo + l] and bits 2(2qhi + qlo).. of qh[32h + l]; each a single byte load whose
  // offset is affine in l, so vector lanes along l read contiguous bytes.
  const int64_t n = b.n();
  Tensor ql = b.bytes(q6_k::kQl, 128).reshape({n, 2, 1, 2, 32}).expand(k_axes(n));
  Tensor low = shift_upper(ql, 2, 4) & 15;
  Tensor q = (low + two_bits(b, q6_k::kQh) * 16).cast(dtypes::int32) - q6_k::kOffset;
  Tensor sc = field_tensor(b, block_layout(GgmlType::Q6_K)->scale).cast(dtypes::float32);
  return (per_sixteen(b.f16(q6_k::kD) * sc) * q.cast(dtypes::float32)).reshape({n, kQK_K});
}

Tensor iq4_xs(const Blocks& b) {
  const int64_t n = b.n();
  const Tensor dl = b.f16(iq4_xs::kD).reshape({n, 1}) *
                    field_tensor(b, block_layout(GgmlType::IQ4_XS)->scale).cast(dtypes::float32);
  // Sub-block j, element 16hi + l: nibble hi of qs[16j + l] (one byte load, offset affine in l).
  const std::vector<int64_t> dims{n, 8, 2, 16};
  Tensor qs = b.bytes(iq4_xs::kQs, 128).reshape({n, 8, 1, 16}).expand(dims);
  Tensor q = lookup16(shift_upper(qs, 2, 4) & 15, kIQ4NLValues);
  return (dl.reshape({n, 8, 1, 1}).expand(dims) * q).reshape({n, kQK_K});
}

Tensor f16(const Blocks& b) { return b.u16(0).bitcast(dtypes::float16).cast(dtypes::float32); }
Tensor bf16(const Blocks& b) {
  return (b.u16(0).cast(dtypes::uint32) * 65536).bitcast(dtypes::float32);
}
Tensor f32(const Blocks& b) { return b.u32(0).bitcast(dtypes::float32); }

using Expr = Tensor (*)(const Blocks&);
const std::map<GgmlType, Expr>& exprs() {
  static const std::map<GgmlType, Expr> table = {
      {GgmlType::F32, f32},       {GgmlType::F16, f16},   {GgmlType::BF16, bf16},
      {GgmlType::Q8_0, q8_0},     {GgmlType::Q4_0, q4_0}, {GgmlType::Q4_1, q4_1},
      {GgmlType::Q5_0, q5_0},     {GgmlType::Q5_1, q5_1}, {GgmlType::IQ4_NL, iq4_nl},
      {GgmlType::MXFP4, mxfp4},   {GgmlType::Q2_K, q2_k}, {GgmlType::Q3_K, q3_k},
      {GgmlType::Q4_K, q4_k},     {GgmlType::Q5_K, q5_k}, {GgmlType::Q6_K, q6_k},
      {GgmlType::IQ4_XS, iq4_xs},
  };
  return table;
}

}  // namespace

bool can_dequantize_lazy(GgmlType type) { return exprs().count(type) > 0; }

Tensor dequantize_lazy(const Tensor& raw, GgmlType type, const std::vector<int64_t>& shape) {
  const QuantFormat& f = format_of(type);
  auto it = exprs().find(type);
  if (it == exprs().end()) fail("dequantize_lazy: {} is not supported", f.name);
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
  return it->second(b).reshape(shape);
}

}  // namespace ugrad::llm
