#include "llm/kernels/int8_units.h"

#include <functional>
#include <tuple>

#include "base/error.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/layout.h"

namespace ugrad::llm {
namespace {

UOp u64(int64_t v) { return UOp::cnst_int(dtypes::uint64, v); }
// An index expression as a uint32 shift amount or operand.
UOp as_u32(const UOp& i) { return i.cast(dtypes::uint32); }
UOp to_f32(const UOp& v) { return v.cast(dtypes::float32); }
UOp as_levels(const UOp& w) { return bitcast(w, dtypes::int32); }

// The bits [bit, bit + n) (an index expression; never across a word) of little-endian words.
UOp select_bits(const std::vector<UOp>& words, const UOp& bit, int n) {
  UOp w = words.back();
  for (int64_t i = static_cast<int64_t>(words.size()) - 2; i >= 0; --i)
    w = bit.lt(32 * (i + 1)).where(words[i], w);
  return (w >> as_u32(bit % 32)) & ((1 << n) - 1);
}

// Field f (layout.h) at index i of the block, from `words`: the block's bytes from `from` on, as
// little-endian uint32 words. As float32, its sign and bias applied. A plane's bit address,
// 8 * byte + shift, is affine in i's digits; where it is c * i plus a constant, the digits are
// not formed.
UOp field_at(const Field& f, const UOp& i, const std::vector<UOp>& words, size_t from) {
  std::array<UOp, kLayoutAxes> digit;
  std::array<int64_t, kLayoutAxes> weight{};
  for (int64_t k = kLayoutAxes - 1, w = 1; k >= 0; --k) {
    if (!f.axes[k]) continue;
    digit[k] = w == 1 ? i % f.axes[k] : i.idiv(w) % f.axes[k];
    weight[k] = w;
    w *= f.axes[k];
  }
  UOp v;
  for (int n = 0; n < f.n_planes; ++n) {
    const BitPlane& p = f.planes[n];
    auto coefficient = [&](int k) { return 8 * p.byte_stride[k] + p.shift_step[k]; };
    int last = kLayoutAxes - 1;
    while (!f.axes[last]) --last;
    bool linear = true;
    for (int k = 0; k <= last; ++k)
      linear = linear && coefficient(k) == coefficient(last) * weight[k];
    UOp bit = idx(8 * (p.offset - static_cast<int64_t>(from)) + p.shift);
    if (linear)
      bit = bit + i * coefficient(last);
    else
      for (int k = 0; k <= last; ++k)
        if (coefficient(k)) bit = bit + digit[k] * coefficient(k);
    const UOp bits = select_bits(words, bit, p.bits);
    const UOp placed = p.place ? bits << p.place : bits;
    v = v ? v | placed : placed;
  }
  if (f.is_signed) v = v.cast(dtypes::uint8).cast(dtypes::int8);
  return f.bias ? to_f32(v) - f32(f.bias) : to_f32(v);
}

// The 16 bytes at `off`, as 4 words.
std::array<UOp, 4> words16(const BlockBytes& b, const UOp& off, bool off_aligned) {
  std::array<UOp, 4> w;
  for (int k = 0; k < 4; ++k) w[k] = b.word(off + 4 * k, off_aligned);
  return w;
}

constexpr int64_t kLow4 = 0x0F0F0F0F;

// 16 quant bytes holding elements i (low nibbles) and i + 16 (high nibbles), as Q4_0's.
Unit nibble_halves(const std::array<UOp, 4>& q, const UOp& first, const UOp& scale,
                   const UOp& min) {
  Unit u(2);
  for (int k = 0; k < 4; ++k) {
    u[0].levels[k] = as_levels(q[k] & kLow4);
    u[1].levels[k] = as_levels((q[k] >> 4) & kLow4);
  }
  u[0] = {u[0].levels, first, scale, min};
  u[1] = {u[1].levels, first + 16, scale, min};
  return u;
}

// Q4_0: one unit per block; value = d * (q - 8).
Unit q4_0_unit(const BlockBytes& b, const UOp&, const View&) {
  UOp d = b.f16(q4_0::kD);
  return nibble_halves(words16(b, idx(q4_0::kQs), false), idx(0), d, d * f32(q4_0::kOffset));
}

// Q8_0: one unit per block, elements 0..15 and 16..31; value = d * q (int8).
Unit q8_0_unit(const BlockBytes& b, const UOp&, const View&) {
  UOp d = b.f16(q8_0::kD);
  Unit u(2);
  for (int h = 0; h < 2; ++h) {
    std::array<UOp, 4> q = words16(b, idx(q8_0::kQs + 16 * h), false);
    for (int k = 0; k < 4; ++k) u[h].levels[k] = as_levels(q[k]);
    u[h].element = idx(16 * h);
    u[h].scale = d;
  }
  return u;
}

// Q4_K and Q5_K: unit j = bytes 16h..16h+15 (h = j % 2) of the 32 quant bytes of sub-blocks
// 2g and 2g+1 (g = j / 2): the low nibbles are elements 16h.. of sub-block 2g, the high ones of
// 2g+1. A sub-block's 6-bit scale and min are its layout's fields (llm/quant/layout.h).
// Q5_K adds the fifth bit of element l of sub-block s: bit s of qh[l].
Unit k4_unit(const BlockBytes& b, const UOp& j, size_t qs, int64_t qh) {
  const UOp g = j.idiv(2), h = j % 2;
  std::array<UOp, 4> q = words16(b, idx(static_cast<int64_t>(qs)) + g * 32 + h * 16, true);
  std::array<UOp, 4> high;
  if (qh >= 0) high = words16(b, idx(qh) + h * 16, true);
  const std::vector<UOp> packed{b.word(q4_k::kScales), b.word(q4_k::kScales + 4),
                                b.word(q4_k::kScales + 8)};
  const BlockLayout& l = *block_layout(GgmlType::Q4_K);  // Q5_K's scales lie alike
  const UOp d = b.f16(q4_k::kD), dmin = b.f16(q4_k::kDmin);
  Unit u(2);
  for (int half = 0; half < 2; ++half) {
    const UOp s = g * 2 + half;  // the sub-block
    for (int k = 0; k < 4; ++k) {
      UOp lv = (q[k] >> (4 * half)) & kLow4;
      if (qh >= 0) lv = lv | (((high[k] >> as_u32(s)) & 0x01010101) << 4);
      u[half].levels[k] = as_levels(lv);
    }
    u[half].element = s * 32 + h * 16;
    u[half].scale = d * field_at(l.scale, s, packed, q4_k::kScales);
    u[half].min = dmin * field_at(l.min, s, packed, q4_k::kScales);
  }
  return u;
}
Unit q4_k_unit(const BlockBytes& b, const UOp& j, const View&) {
  return k4_unit(b, j, q4_k::kQs, -1);
}
Unit q5_k_unit(const BlockBytes& b, const UOp& j, const View&) {
  return k4_unit(b, j, q5_k::kQs, static_cast<int64_t>(q5_k::kQh));
}

// Q6_K: unit j = (n, a, h) = (j / 4, j / 2 % 2, j % 2) reads ql[64n + 32a + 16h ..] and
// qh[32n + 16h ..]: the low nibbles with qh bits 2a, 2a+1 are elements 128n + 32a + 16h + i
// (sub-block 8n + 2a + h), the high nibbles with bits 4+2a, 5+2a the same plus 64 (sub-block
// + 4). value = d * scale[s] * (q - 32), scale int8.
Unit q6_k_unit(const BlockBytes& b, const UOp& j, const View&) {
  const UOp n = j.idiv(4), a = j.idiv(2) % 2, h = j % 2;
  std::array<UOp, 4> ql = words16(b, n * 64 + a * 32 + h * 16, false);
  std::array<UOp, 4> qh = words16(b, idx(static_cast<int64_t>(q6_k::kQh)) + n * 32 + h * 16, false);
  const UOp d = b.f16(q6_k::kD);
  std::vector<UOp> scales;
  for (int64_t k = 0; k < 16; k += 4) scales.push_back(b.word(q6_k::kScales + k));
  Unit u(2);
  for (int half = 0; half < 2; ++half) {
    const UOp hshift = as_u32(a * 2 + 4 * half);
    for (int k = 0; k < 4; ++k)
      u[half].levels[k] =
          as_levels(((ql[k] >> (4 * half)) & kLow4) | (((qh[k] >> hshift) & 0x03030303) << 4));
    const UOp s = n * 8 + a * 2 + h + 4 * half;
    u[half].element = n * 128 + a * 32 + h * 16 + 64 * half;
    u[half].scale = d * field_at(block_layout(GgmlType::Q6_K)->scale, s, scales, q6_k::kScales);
    u[half].min = u[half].scale * f32(q6_k::kOffset);
  }
  return u;
}

// Q2_K and Q3_K: unit j = (h, m) = (j / 2, j % 2) reads qs[32h + 16m ..]: bits 2s.. of byte i
// are element 128h + 32s + 16m + i (sub-block 8h + 2s + m), four pieces s = 0..3. Q3_K's third
// bit of element e is bit e / 32 of hmask[e % 32]: bit 4h + s of hmask[16m + i].
Unit two_bit_unit(const BlockBytes& b, const UOp& j, size_t qs, int64_t hmask,
                  const std::function<std::pair<UOp, UOp>(const UOp& sub_block)>& scale_min) {
  const UOp h = j.idiv(2), m = j % 2;
  std::array<UOp, 4> q = words16(b, idx(static_cast<int64_t>(qs)) + h * 32 + m * 16, true);
  std::array<UOp, 4> high;
  if (hmask >= 0) high = words16(b, idx(hmask) + m * 16, true);
  Unit u(4);
  for (int s = 0; s < 4; ++s) {
    for (int k = 0; k < 4; ++k) {
      UOp lv = (q[k] >> (2 * s)) & 0x03030303;
      if (hmask >= 0) lv = lv | (((high[k] >> as_u32(h * 4 + s)) & 0x01010101) << 2);
      u[s].levels[k] = as_levels(lv);
    }
    u[s].element = h * 128 + m * 16 + 32 * s;
    std::tie(u[s].scale, u[s].min) = scale_min(h * 8 + m + 2 * s);
  }
  return u;
}

// Q2_K: value = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4).
Unit q2_k_unit(const BlockBytes& b, const UOp& j, const View&) {
  std::vector<UOp> scales;
  for (int64_t k = 0; k < 16; k += 4) scales.push_back(b.word(q2_k::kScales + k));
  const UOp d = b.f16(q2_k::kD), dmin = b.f16(q2_k::kDmin);
  const BlockLayout& l = *block_layout(GgmlType::Q2_K);
  return two_bit_unit(b, j, q2_k::kQs, -1, [&](const UOp& s) {
    return std::pair{d * field_at(l.scale, s, scales, q2_k::kScales),
                     dmin * field_at(l.min, s, scales, q2_k::kScales)};
  });
}

// Q3_K: value = d * (sc - 32) * (q - 4), the 6-bit sc its layout's field (nibble s / 8 of
// scales[s % 8] below bits 2(s / 4).. of scales[8 + s % 4]).
Unit q3_k_unit(const BlockBytes& b, const UOp& j, const View&) {
  std::vector<UOp> packed;
  for (int64_t k = 0; k < q3_k::kScaleBytes; k += 4) packed.push_back(b.word(q3_k::kScales + k));
  const UOp d = b.f16(q3_k::kD);
  const Field& scales = block_layout(GgmlType::Q3_K)->scale;
  return two_bit_unit(b, j, q3_k::kQs, static_cast<int64_t>(q3_k::kHmask), [&](const UOp& s) {
    const UOp scale = d * field_at(scales, s, packed, q3_k::kScales);
    return std::pair{scale, scale * f32(q3_k::kOffset)};
  });
}

// IQ4_XS: unit j = sub-block j, its 16 quant bytes as Q4_0's; each nibble's level from the
// table (kIQ4NLValues), 4 at a time by quant byte; value = d * (ls - 32) * level with the 6-bit
// ls from scales_l (4 bits) and scales_h (2 bits).
Unit iq4_xs_unit(const BlockBytes& b, const UOp& j, const View& table) {
  const std::vector<UOp> head{b.word(iq4_xs::kD), b.word(iq4_xs::kScalesL)};
  const UOp scale =
      b.f16(iq4_xs::kD) * field_at(block_layout(GgmlType::IQ4_XS)->scale, j, head, iq4_xs::kD);
  std::array<UOp, 4> q = words16(b, idx(static_cast<int64_t>(iq4_xs::kQs)) + j * 16, true);
  Unit u(2);
  for (int k = 0; k < 4; ++k) {
    UOp lo = u32(0), hi = u32(0);
    for (int i = 0; i < 4; ++i) {
      const UOp e = table(((q[k] >> (8 * i)) & 255).cast(dtypes::index));
      lo = lo | ((e & 255) << (8 * i));
      hi = hi | (((e >> 8) & 255) << (8 * i));
    }
    u[0].levels[k] = as_levels(lo);
    u[1].levels[k] = as_levels(hi);
  }
  u[0].element = j * 32;
  u[1].element = j * 32 + 16;
  u[0].scale = u[1].scale = scale;
  return u;
}

const UnitFormat kFormats[] = {
    {GgmlType::Q4_0, 1, false, false, q4_0_unit}, {GgmlType::Q8_0, 1, true, false, q8_0_unit},
    {GgmlType::Q2_K, 4, false, false, q2_k_unit}, {GgmlType::Q3_K, 4, false, false, q3_k_unit},
    {GgmlType::Q4_K, 8, false, false, q4_k_unit}, {GgmlType::Q5_K, 8, false, false, q5_k_unit},
    {GgmlType::Q6_K, 8, false, false, q6_k_unit}, {GgmlType::IQ4_XS, 8, true, true, iq4_xs_unit},
};

}  // namespace

UOp BlockBytes::load(const UOp& i, const UOp& gate) const { return ugrad::load(words.at(i), gate); }

UOp BlockBytes::word(const UOp& off, bool off_aligned) const {
  const UOp at = start + off;
  if (aligned4 && off_aligned) return load(at.idiv(4));
  // Two words joined: the 4 bytes start `shift` bits into the first one (0 or 16). The second
  // word is read only when the bytes reach into it.
  const UOp first = at.idiv(4), shift = as_u32(at % 4) * 8;
  const UOp lo = load(first).cast(dtypes::uint64);
  const UOp hi = load(first + 1, (at % 4).ne(idx(0))).cast(dtypes::uint64);
  return ((lo | (hi << u64(32))) >> shift.cast(dtypes::uint64)).cast(dtypes::uint32);
}
UOp BlockBytes::word(int64_t off) const { return word(idx(off), off % 4 == 0); }

UOp BlockBytes::f16(int64_t off) const {
  // One load: the word holding both bytes (an even offset never straddles two words).
  const UOp at = start + off;
  const UOp w = aligned4 ? word(off & ~int64_t{3}) : load(at.idiv(4));
  const UOp shift = aligned4 ? u32(off % 4 * 8) : as_u32(at % 4) * 8;
  const UOp bits = ((w >> shift) & 0xFFFF).cast(dtypes::uint16);
  return to_f32(UOp::make(Op::BITCAST, dtypes::float16, {bits}));
}

const UnitFormat* unit_format(GgmlType type) {
  for (const UnitFormat& f : kFormats)
    if (f.type == type) return &f;
  return nullptr;
}

View table_in_lds(KernelBuilder& kb, const View& table, const UOp& thread, int64_t threads) {
  return copy_to_lds(kb, dtypes::uint32, 256, thread, threads,
                     [&](const UOp& e, const UOp& gate) { return load(table.at(e), gate); });
}

UnitRow unit_row(const UnitFormat& f, int64_t in) {
  const QuantFormat& q = format_of(f.type);
  const int64_t blocks = in / q.block_size;
  return {q.block_size, q.block_bytes, blocks * q.block_bytes, blocks * f.units_per_block};
}

bool reads_as_units(GgmlType type, int64_t in) {
  const UnitFormat* f = unit_format(type);
  return f && in > 0 && in % kQK_K == 0 && unit_row(*f, in).row_bytes % 4 == 0;
}

Tensor unit_table(GgmlType type, const std::string& device) {
  if (type != GgmlType::IQ4_XS) fail("unit_table: {} has no level table", format_of(type).name);
  return constant_table("iq4_nl levels", device, [](const std::string& d) {
    std::vector<uint32_t> entries(256);
    for (int q = 0; q < 256; ++q)
      entries[q] = static_cast<uint8_t>(kIQ4NLValues[q & 15]) |
                   (uint32_t{static_cast<uint8_t>(kIQ4NLValues[q >> 4])} << 8);
    return Tensor::from_vector(entries, {256}, dtypes::uint32, d);
  });
}

}  // namespace ugrad::llm
