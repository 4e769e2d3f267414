#include "llm/quant/layout.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"

namespace ugrad::llm {
namespace {

constexpr BitPlane plane(size_t offset, int shift, int bits, int place,
                         std::array<int64_t, kLayoutAxes> byte_stride,
                         std::array<int, kLayoutAxes> shift_step) {
  return {static_cast<int64_t>(offset), shift, bits, place, byte_stride, shift_step};
}
constexpr Field field(std::array<int64_t, kLayoutAxes> axes, BitPlane p, int bias = 0,
                      bool is_signed = false) {
  return {axes, {p, {}}, 1, is_signed, bias};
}
constexpr Field field(std::array<int64_t, kLayoutAxes> axes, BitPlane low, BitPlane high,
                      int bias = 0) {
  return {axes, {low, high}, 2, false, bias};
}
constexpr Field kNone{};

// Q4_0-ordered nibbles at `qs`: byte j holds element j (low) and j + 16 (high).
constexpr Field nibbles(size_t qs, int bias) {
  return field({2, 16}, plane(qs, 0, 4, 0, {0, 1}, {4, 0}), bias);
}
// Q5_0/Q5_1: nibbles as Q4_0, and bit e of the u32 at qh is the 5th bit of element e
// (e = 16h + 8m + 4a + 2b + c).
constexpr Field five_bits(size_t qs, size_t qh, int bias) {
  return field({2, 2, 2, 2, 2}, plane(qs, 0, 4, 0, {0, 8, 4, 2, 1}, {4, 0, 0, 0, 0}),
               plane(qh, 0, 1, 4, {2, 1, 0, 0, 0}, {0, 0, 4, 2, 1}), bias);
}
// Q2_K/Q3_K: element 128h + 32s + l is bits 2s.. of qs[32h + l], s = 2s1 + s0.
constexpr BitPlane kTwoBits(size_t qs) { return plane(qs, 0, 2, 0, {32, 0, 0, 1}, {0, 4, 2, 0}); }
// Q4_K/Q5_K: element 64g + 32c + l (g = 2a + b) is nibble c of qs[32g + l].
constexpr BitPlane k_nibble(size_t qs) { return plane(qs, 0, 4, 0, {64, 32, 0, 1}, {0, 0, 4, 0}); }
// Q3_K's hmask, Q5_K's qh: bit e / 32 of byte e % 32 is bit `place` of element e.
constexpr BitPlane bit_of_32(size_t off, int place) {
  return plane(off, 0, 1, place, {0, 0, 0, 1}, {4, 2, 1, 0});
}
// Q4_K/Q5_K 6-bit scales (j = 4h + l): the low nibble of s[l + 8h], bits 4 + 2h.. of s[l]; the
// mins: nibble h of s[l + 4 + 4h], bits 4 + 2h.. of s[l + 4].
constexpr Field k4_scales(size_t s) {
  return field({2, 4}, plane(s, 0, 4, 0, {8, 1}, {0, 0}), plane(s, 4, 2, 4, {0, 1}, {2, 0}));
}
constexpr Field k4_mins(size_t s) {
  return field({2, 4}, plane(s + 4, 0, 4, 0, {4, 1}, {4, 0}),
               plane(s + 4, 4, 2, 4, {0, 1}, {2, 0}));
}
constexpr std::array<int64_t, kLayoutAxes> kKAxes{2, 2, 2, 32};

using enum GgmlType;
const BlockLayout kLayouts[] = {
    {Q8_0, field({32}, plane(q8_0::kQs, 0, 8, 0, {1}, {0}), 0, true), kQK, kNone, kNone, q8_0::kD,
     ScaleKind::F16, -1, 0, Levels::Integer},
    {Q4_0, nibbles(q4_0::kQs, q4_0::kOffset), kQK, kNone, kNone, q4_0::kD, ScaleKind::F16, -1, 0,
     Levels::Integer},
    {Q4_1, nibbles(q4_1::kQs, 0), kQK, kNone, kNone, q4_1::kD, ScaleKind::F16, q4_1::kM, 1,
     Levels::Integer},
    {Q5_0, five_bits(q5_0::kQs, q5_0::kQh, q5_0::kOffset), kQK, kNone, kNone, q5_0::kD,
     ScaleKind::F16, -1, 0, Levels::Integer},
    {Q5_1, five_bits(q5_1::kQs, q5_1::kQh, 0), kQK, kNone, kNone, q5_1::kD, ScaleKind::F16,
     q5_1::kM, 1, Levels::Integer},
    {IQ4_NL, nibbles(iq4_nl::kQs, 0), kQK, kNone, kNone, iq4_nl::kD, ScaleKind::F16, -1, 0,
     Levels::IQ4NL},
    {MXFP4, nibbles(mxfp4::kQs, 0), kQK, kNone, kNone, mxfp4::kE, ScaleKind::E8M0Half, -1, 0,
     Levels::MXFP4},
    // Sub-block j's scale is the low nibble of scales[j], its min the high one.
    {Q2_K, field(kKAxes, kTwoBits(q2_k::kQs)), q2_k::kSubBlock,
     field({16}, plane(q2_k::kScales, 0, 4, 0, {1}, {0})),
     field({16}, plane(q2_k::kScales, 4, 4, 0, {1}, {0})), q2_k::kD, ScaleKind::F16, q2_k::kDmin,
     -1, Levels::Integer},
    // Scale j = 8h + 4m + l: nibble h of scales[4m + l], bits 2(2h + m).. of scales[8 + l].
    {Q3_K, field(kKAxes, kTwoBits(q3_k::kQs), bit_of_32(q3_k::kHmask, 2), q3_k::kOffset),
     q3_k::kSubBlock,
     field({2, 2, 4}, plane(q3_k::kScales, 0, 4, 0, {0, 4, 1}, {4, 0, 0}),
           plane(q3_k::kScales + 8, 0, 2, 4, {0, 0, 1}, {4, 2, 0}), q3_k::kScaleOffset),
     kNone, q3_k::kD, ScaleKind::F16, -1, 0, Levels::Integer},
    {Q4_K, field(kKAxes, k_nibble(q4_k::kQs)), q4_k::kSubBlock, k4_scales(q4_k::kScales),
     k4_mins(q4_k::kScales), q4_k::kD, ScaleKind::F16, q4_k::kDmin, -1, Levels::Integer},
    {Q5_K, field(kKAxes, k_nibble(q5_k::kQs), bit_of_32(q5_k::kQh, 4)), q5_k::kSubBlock,
     k4_scales(q5_k::kScales), k4_mins(q5_k::kScales), q5_k::kD, ScaleKind::F16, q5_k::kDmin, -1,
     Levels::Integer},
    // Element 128h + 32(2n + m) + l: nibble n of ql[64h + 32m + l], bits 2(2n + m).. of
    // qh[32h + l].
    {Q6_K,
     field(kKAxes, plane(q6_k::kQl, 0, 4, 0, {64, 0, 32, 1}, {0, 4, 0, 0}),
           plane(q6_k::kQh, 0, 2, 4, {32, 0, 0, 1}, {0, 4, 2, 0}), q6_k::kOffset),
     q6_k::kSubBlock, field({16}, plane(q6_k::kScales, 0, 8, 0, {1}, {0}), 0, true), kNone,
     q6_k::kD, ScaleKind::F16, -1, 0, Levels::Integer},
    {Q8_K, field({kQK_K}, plane(q8_k::kQs, 0, 8, 0, {1}, {0}), 0, true), kQK_K, kNone, kNone,
     q8_k::kD, ScaleKind::F32, -1, 0, Levels::Integer},
    // Element 32j + 16n + l: nibble n of qs[16j + l]. Scale j = 4a + 2b + c: nibble c of
    // scales_l[2a + b], bits 2(2b + c).. of scales_h[a].
    {IQ4_XS, field({8, 2, 16}, plane(iq4_xs::kQs, 0, 4, 0, {16, 0, 1}, {0, 4, 0})),
     iq4_xs::kSubBlock,
     field({2, 2, 2}, plane(iq4_xs::kScalesL, 0, 4, 0, {2, 1, 0}, {0, 0, 4}),
           plane(iq4_xs::kScalesH, 0, 2, 4, {1, 0, 0}, {0, 4, 2}), iq4_xs::kScaleOffset),
     kNone, iq4_xs::kD, ScaleKind::F16, -1, 0, Levels::IQ4NL},
};

// Byte and shift of plane p at index i.
std::pair<int64_t, int> locate(const Field& f, const BitPlane& p, int64_t i) {
  int64_t byte = p.offset;
  int shift = p.shift;
  for (int k = kLayoutAxes - 1; k >= 0; --k) {
    if (!f.axes[k]) continue;
    const int64_t digit = i % f.axes[k];
    i /= f.axes[k];
    byte += digit * p.byte_stride[k];
    shift += static_cast<int>(digit) * p.shift_step[k];
  }
  return {byte, shift};
}

}  // namespace

uint8_t Field::raw(const uint8_t* block, int64_t i) const {
  int v = 0;
  for (int k = 0; k < n_planes; ++k) {
    const auto [byte, shift] = locate(*this, planes[k], i);
    v |= ((block[byte] >> shift) & ((1 << planes[k].bits) - 1)) << planes[k].place;
  }
  return static_cast<uint8_t>(v);
}

namespace {

// Calls run(first index, length, byte, shift, byte step, shift step) for each run of plane p of
// f: its trailing axes that step the byte and the shift evenly are walked as one run, the axes
// before them as an odometer.
template <class Run>
void each_run(const Field& f, const BitPlane& p, Run&& run) {
  const int last = f.rank() - 1;
  const int64_t byte_step = p.byte_stride[last], shift_step = p.shift_step[last];
  int64_t inner = f.axes[last];
  int first = last;
  while (first > 0 && p.byte_stride[first - 1] == byte_step * inner &&
         p.shift_step[first - 1] == shift_step * inner)
    inner *= f.axes[--first];
  std::array<int64_t, kLayoutAxes> digit{};
  int64_t byte = p.offset;
  int shift = p.shift;
  for (int64_t o = 0, n = f.count(); o < n; o += inner) {
    run(o, inner, byte, shift, byte_step, static_cast<int>(shift_step));
    for (int a = first - 1; a >= 0; --a) {
      byte += p.byte_stride[a];
      shift += p.shift_step[a];
      if (++digit[a] < f.axes[a]) break;
      byte -= p.byte_stride[a] * f.axes[a];
      shift -= p.shift_step[a] * static_cast<int>(f.axes[a]);
      digit[a] = 0;
    }
  }
}

// A plane's bits never cross a byte, so its runs of contiguous bytes are read and written 8 bytes
// at a time: shifts move bits across byte boundaries only where the byte-replicated mask then
// clears them.
constexpr uint64_t kBytes8 = 0x0101010101010101ull;
inline uint64_t load8(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void store8(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

}  // namespace

void Field::raw_all(const uint8_t* block, uint8_t* out) const {
  if (!n_planes) return;
  std::fill(out, out + count(), uint8_t{0});
  for (int k = 0; k < n_planes; ++k) {
    const int mask = (1 << planes[k].bits) - 1, place = planes[k].place;
    each_run(
        *this, planes[k], [=](int64_t o, int64_t len, int64_t byte, int shift, int64_t bs, int ss) {
          const uint8_t* at = block + byte;
          uint8_t* dst = out + o;
          if (bs == 1 && ss == 0 && len % 8 == 0) {
            const uint64_t m = mask * kBytes8;
            for (int64_t l = 0; l < len; l += 8)
              store8(dst + l, load8(dst + l) | ((load8(at + l) >> shift) & m) << place);
            return;
          }
          for (int64_t l = 0; l < len; ++l)
            dst[l] =
                static_cast<uint8_t>(dst[l] | ((at[l * bs] >> (shift + l * ss)) & mask) << place);
        });
  }
}

void Field::store_all(uint8_t* block, const uint8_t* raw) const {
  for (int k = 0; k < n_planes; ++k) {
    const int mask = (1 << planes[k].bits) - 1, place = planes[k].place;
    each_run(*this, planes[k],
             [=](int64_t o, int64_t len, int64_t byte, int shift, int64_t bs, int ss) {
               uint8_t* at = block + byte;
               const uint8_t* src = raw + o;
               if (bs == 1 && ss == 0 && len % 8 == 0) {
                 const uint64_t m = mask * kBytes8;
                 for (int64_t l = 0; l < len; l += 8)
                   store8(at + l, (load8(at + l) & ~(m << shift)) | ((load8(src + l) >> place) & m)
                                                                        << shift);
                 return;
               }
               for (int64_t l = 0; l < len; ++l) {
                 uint8_t& b = at[l * bs];
                 const int s = shift + static_cast<int>(l) * ss;
                 b = static_cast<uint8_t>((b & ~(mask << s)) | (((src[l] >> place) & mask) << s));
               }
             });
  }
}

void Field::store(uint8_t* block, int64_t i, int raw) const {
  for (int k = 0; k < n_planes; ++k) {
    const auto [byte, shift] = locate(*this, planes[k], i);
    const int mask = (1 << planes[k].bits) - 1;
    block[byte] = static_cast<uint8_t>((block[byte] & ~(mask << shift)) |
                                       (((raw >> planes[k].place) & mask) << shift));
  }
}

const BlockLayout* block_layout(GgmlType type) {
  for (const BlockLayout& l : kLayouts)
    if (l.type == type) return &l;
  return nullptr;
}

float level_value(Levels levels, int q) {
  switch (levels) {
    case Levels::Integer:
      return static_cast<float>(q);
    case Levels::IQ4NL:
      return static_cast<float>(kIQ4NLValues[q & 15]);
    case Levels::MXFP4:
      return static_cast<float>(kMXFP4Values[q & 15]);
  }
  return 0;
}

float super_scale(const BlockLayout& l, const uint8_t* block) {
  switch (l.d_kind) {
    case ScaleKind::F16:
      return load_f16(block + l.d);
    case ScaleKind::F32:
      return load_f32(block + l.d);
    case ScaleKind::E8M0Half:
      return e8m0_to_float_half(block[l.d]);
  }
  return 0;
}

void take_apart(const BlockLayout& l, const uint8_t* block, BlockParts& out) {
  out.d = load_u16(block + l.d);
  if (l.m >= 0) out.m = load_u16(block + l.m);
  l.quant.raw_all(block, out.quant.data());
  uint8_t raw[16];
  l.scale.raw_all(block, raw);
  for (int64_t j = 0; j < l.scale.count(); ++j) out.scale[j] = l.scale.value(raw[j]);
  l.min.raw_all(block, raw);
  for (int64_t j = 0; j < l.min.count(); ++j) out.min[j] = l.min.value(raw[j]);
}

void decode_blocks(const BlockLayout& l, const uint8_t* src, float* dst, size_t nblocks) {
  const QuantFormat& f = format_of(l.type);
  const int64_t subs = f.block_size / l.sub_block;
  std::array<float, 256> level;  // by raw quant bits
  for (int r = 0; r < 256; ++r) level[r] = level_value(l.levels, l.quant.value(uint8_t(r)));
  std::vector<uint8_t> q(f.block_size), sc(subs), mn(subs);
  for (size_t b = 0; b < nblocks; ++b, src += f.block_bytes) {
    const float d = super_scale(l, src);
    const float m = l.m >= 0 ? load_f16(src + l.m) * l.min_sign : 0.0f;
    l.quant.raw_all(src, q.data());
    l.scale.raw_all(src, sc.data());
    l.min.raw_all(src, mn.data());
    for (int64_t s = 0; s < subs; ++s, dst += l.sub_block) {
      const float scale = l.scale.n_planes ? d * static_cast<float>(l.scale.value(sc[s])) : d;
      const uint8_t* qs = q.data() + s * l.sub_block;
      for (int64_t e = 0; e < l.sub_block; ++e) dst[e] = scale * level[qs[e]];
      if (l.m < 0) continue;
      const float offset = l.min.n_planes ? m * static_cast<float>(l.min.value(mn[s])) : m;
      for (int64_t e = 0; e < l.sub_block; ++e) dst[e] += offset;
    }
  }
}

}  // namespace ugrad::llm
