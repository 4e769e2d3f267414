#include "llm/kernels/int8_units.h"

#include <algorithm>

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
    const int last = f.rank() - 1;
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

// A mask of the low `bits` of each byte of a word.
int64_t byte_mask(int bits) { return ((int64_t{1} << bits) - 1) * 0x01010101; }

// The little-endian words of the block's bytes the fields' planes lie in, from a multiple of 4
// (`from`) on.
std::vector<UOp> field_words(const BlockBytes& b, std::initializer_list<const Field*> fields,
                             size_t& from) {
  int64_t lo = -1, hi = 0;
  for (const Field* f : fields)
    for (int n = 0; n < f->n_planes; ++n) {
      const BitPlane& p = f->planes[n];
      int64_t last = p.offset;
      for (int k = 0; k < f->rank(); ++k) last += p.byte_stride[k] * (f->axes[k] - 1);
      lo = lo < 0 ? p.offset : std::min(lo, p.offset);
      hi = std::max(hi, last + 1);
    }
  from = static_cast<size_t>(lo & ~int64_t{3});
  std::vector<UOp> words;
  for (int64_t off = lo & ~int64_t{3}; off < hi; off += 4) words.push_back(b.word(off));
  return words;
}

// The int32 level words of 16 quant bytes, both nibbles of each looked up in the table at once
// (entry q: the levels of its low and high nibble in bytes 0 and 1): the low nibbles' and the
// high nibbles' words.
std::array<std::array<UOp, 4>, 2> table_levels(const std::array<UOp, 4>& bytes, const View& table) {
  std::array<std::array<UOp, 4>, 2> levels;
  for (int k = 0; k < 4; ++k) {
    UOp lo = u32(0), hi = u32(0);
    for (int i = 0; i < 4; ++i) {
      const UOp e = table(((bytes[k] >> (8 * i)) & 255).cast(dtypes::index));
      lo = lo | ((e & 255) << (8 * i));
      hi = hi | (((e >> 8) & 255) << (8 * i));
    }
    levels[0][k] = as_levels(lo);
    levels[1][k] = as_levels(hi);
  }
  return levels;
}

// sum_k coef[k] * digit_k over the axes that step the quant field's first plane's byte, the
// digits those of `at` (a byte of the plane); null where no coefficient is set. Axes whose
// coefficients are proportional to their strides and that nest (each stride the next one's times
// its radix) are one term: (at / the finest stride % their radices' product) * its coefficient.
template <class C>
UOp byte_digits(const Field& q, const UOp& at, const std::array<C, kLayoutAxes>& coef) {
  const BitPlane& p = q.planes[0];
  std::vector<UOp> terms;
  int64_t radix = 0;  // the run's radices' product (0: the run holds the outermost axis)
  int last = -1;      // the run's finest axis (-1: no run)
  const auto close = [&] {
    if (last < 0) return;
    const UOp digit = at.idiv(p.byte_stride[last]);
    terms.push_back((radix ? digit % radix : digit) * coef[last]);
    last = -1;
  };
  bool outermost = true;
  for (int k = 0; k < q.rank(); ++k) {
    if (!p.byte_stride[k]) continue;
    const bool joins = last >= 0 &&
                       coef[k] * p.byte_stride[last] == coef[last] * p.byte_stride[k] &&
                       p.byte_stride[last] == p.byte_stride[k] * q.axes[k];
    if (!joins) close();
    if (coef[k]) {
      if (!joins) radix = outermost ? 0 : 1;
      if (radix) radix *= q.axes[k];
      last = k;
    }
    outermost = false;
  }
  close();
  return terms.empty() ? UOp() : sum(terms);
}

// v + c, v possibly null.
UOp plus(const UOp& v, int64_t c) { return !v ? idx(c) : c ? v + c : v; }

}  // namespace

// Unit j is 16 bytes of the quant field's first plane per group (one group; Q8_0's two):
// consecutive bytes step the field's innermost axis, the group's place fixes the other axes that
// step the byte, and each value of the axes that step the shift (reading the same bytes) is a
// piece. The second plane's bytes and shift (the high bits) follow from the same digits.
Unit UnitFormat::unit(const BlockBytes& b, const UOp& j, const View& table) const {
  const BlockLayout& l = *layout;
  const Field& q = l.quant;
  const BitPlane &low = q.planes[0], &hp = q.planes[1];
  std::array<int64_t, kLayoutAxes> weight{};
  std::vector<int> shift_axes;
  for (int64_t k = q.rank() - 1, w = 1; k >= 0; w *= q.axes[k], --k) {
    weight[k] = w;
    if (low.shift_step[k]) shift_axes.push_back(static_cast<int>(k));
  }
  const int64_t groups = q.count() * low.bits / 8 / (16 * units_per_block);
  size_t from = 0;
  const std::vector<UOp> words = field_words(b, {&l.scale, &l.min}, from);
  const UOp d = b.f16(static_cast<int64_t>(l.d)), dmin = l.m >= 0 ? b.f16(l.m) : UOp();
  Unit u;
  for (int64_t g = 0; g < groups; ++g) {
    const UOp at = groups > 1 ? j * (16 * groups) + 16 * g : j * 16;  // the group's first byte
    const std::array<UOp, 4> bytes = words16(b, at + low.offset, low.offset % 4 == 0);
    const UOp element = byte_digits(q, at, weight), hshift = byte_digits(q, at, hp.shift_step);
    std::array<std::array<UOp, 4>, 2> table_lv;
    if (uses_table()) table_lv = table_levels(bytes, table);
    std::array<UOp, 4> high;
    if (q.n_planes == 2)
      high = words16(b, plus(byte_digits(q, at, hp.byte_stride), hp.offset), hp.offset % 4 == 0);
    for (size_t c = 0; c < (size_t{1} << shift_axes.size()); ++c) {
      int64_t first = 0, shift = low.shift, hshift_c = hp.shift;  // the piece's own digits
      for (size_t a = 0; a < shift_axes.size(); ++a) {
        const int k = shift_axes[a], bit = static_cast<int>(c >> a) & 1;
        first += bit * weight[k];
        shift += bit * low.shift_step[k];
        hshift_c += bit * hp.shift_step[k];
      }
      UnitPiece p;
      if (uses_table()) p.levels = table_lv[c];  // piece c: the nibbles at shift 4c
      for (int k = 0; k < 4 && !uses_table(); ++k) {
        UOp lv = shift ? bytes[k] >> shift : bytes[k];
        if (low.bits < 8) lv = lv & byte_mask(low.bits);
        if (q.n_planes == 2)
          lv =
              lv | (((high[k] >> as_u32(plus(hshift, hshift_c))) & byte_mask(hp.bits)) << hp.place);
        p.levels[k] = as_levels(lv);
      }
      p.element = plus(element, first);
      const UOp s = p.element.idiv(l.sub_block);
      p.scale = l.scale.n_planes ? d * field_at(l.scale, s, words, from) : d;
      if (q.bias) p.min = p.scale * f32(q.bias);
      if (l.min.n_planes) p.min = dmin * field_at(l.min, s, words, from);
      u.push_back(p);
    }
  }
  return u;
}

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
  // Units per block: 16 bytes of the quant plane each (Q8_0: its 32).
  static const std::vector<UnitFormat> formats = [] {
    std::vector<UnitFormat> v;
    for (auto [t, units] : {std::pair{GgmlType::Q4_0, 1},
                            {GgmlType::Q8_0, 1},
                            {GgmlType::Q2_K, 4},
                            {GgmlType::Q3_K, 4},
                            {GgmlType::Q4_K, 8},
                            {GgmlType::Q5_K, 8},
                            {GgmlType::Q6_K, 8},
                            {GgmlType::IQ4_XS, 8}}) {
      v.push_back({t, units, block_layout(t)});
    }
    return v;
  }();
  for (const UnitFormat& f : formats)
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
