#include "llm/quant/linear_int8.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "base/huge_pages.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "runtime/thread_pool.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kLanes = kLinearInt8Lanes;

// The fields of a layout in the order the header lists them.
constexpr LinearInt8Layout layout(GgmlType type, int64_t blocks, int64_t steps, int high_bits,
                                  bool has_mins, int offset) {
  LinearInt8Layout f{type, blocks, steps, high_bits, has_mins, offset, 0, 0, 0, 0, 0, 0, 0};
  size_t at = 0;
  auto field = [&](size_t bytes) {
    const size_t here = at;
    at += bytes;
    return here;
  };
  f.d = field(4);  // fp16 per block: one word for the two of a pair, a half word for one block
  f.dmin = field(has_mins ? 4 : 0);
  f.scales = field(kLanes);
  f.mins = field(has_mins ? kLanes : 0);
  f.codes = field(static_cast<size_t>(8 * steps) * 4);
  f.high = field(high_bits ? 4 * kLanes : 0);
  f.bytes = at;
  return f;
}

// One file block taken apart: d, dmin, a scale and a min per sub-block, the 256 levels (offset
// and, for IQ4_XS, codes of its table).
struct BlockParts {
  uint16_t d = 0, dmin = 0;  // fp16
  std::array<int, 16> scale{}, min{};
  std::array<uint8_t, kQK_K> level{};
};

// The block decoders and write_group work a word (4 levels) at a time: the copies are made at
// every load.
constexpr uint32_t kLow4 = 0x0F0F0F0F;

// Q4_K and Q5_K: sub-block j's element l is nibble j % 2 of qs[32 (j / 2) + l] (Q5_K: plus bit j
// of qh[l] as the fifth).
void k4_parts(const uint8_t* p, bool q5, BlockParts& o) {
  o.d = load_u16(p + q4_k::kD);
  o.dmin = load_u16(p + q4_k::kDmin);
  const uint8_t* qs = p + (q5 ? q5_k::kQs : q4_k::kQs);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    unpack_scale_min_k4(j, p + q4_k::kScales, &sc, &m);
    o.scale[j] = sc;
    o.min[j] = m;
    for (int w = 0; w < 8; ++w) {
      uint32_t q = (load_u32(qs + 32 * (j / 2) + 4 * w) >> (4 * (j % 2))) & kLow4;
      if (q5) q |= ((load_u32(p + q5_k::kQh + 4 * w) >> j) & 0x01010101) << 4;
      store_u32(o.level.data() + 32 * j + 4 * w, q);
    }
  }
}
void q4_k_parts(const uint8_t* p, BlockParts& o) { k4_parts(p, false, o); }
void q5_k_parts(const uint8_t* p, BlockParts& o) { k4_parts(p, true, o); }

// Q6_K: element 128h + 32k + l is nibble k / 2 of ql[64h + 32 (k % 2) + l] and bits 2k.. of
// qh[32h + l]; 16 int8 scales, one per 16 elements.
void q6_k_parts(const uint8_t* p, BlockParts& o) {
  o.d = load_u16(p + q6_k::kD);
  for (int j = 0; j < 16; ++j) o.scale[j] = static_cast<int8_t>(p[q6_k::kScales + j]);
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int w = 0; w < 8; ++w) {
        const uint32_t low =
            (load_u32(p + q6_k::kQl + 64 * h + 32 * (k % 2) + 4 * w) >> (4 * (k / 2))) & kLow4;
        const uint32_t high = (load_u32(p + q6_k::kQh + 32 * h + 4 * w) >> (2 * k)) & 0x03030303;
        store_u32(o.level.data() + 128 * h + 32 * k + 4 * w, low | high << 4);
      }
}

void iq4_xs_parts(const uint8_t* p, BlockParts& o) {
  o.d = load_u16(p + iq4_xs::kD);
  for (int j = 0; j < 8; ++j) o.scale[j] = iq4_xs_scale(p, j);
  iq4_xs_codes(p, o.level.data());
}

// Each format's layout and the function that takes its blocks apart.
struct Form {
  LinearInt8Layout layout;
  void (*parts)(const uint8_t* block, BlockParts& out);
};
constexpr std::array kForms{
    Form{layout(GgmlType::Q4_K, 2, 8, 0, true, 0), q4_k_parts},
    Form{layout(GgmlType::Q5_K, 2, 8, 1, true, 0), q5_k_parts},
    Form{layout(GgmlType::Q6_K, 1, 4, 2, false, q6_k::kOffset), q6_k_parts},
    Form{layout(GgmlType::IQ4_XS, 2, 8, 0, false, kIQ4NLOffset), iq4_xs_parts},
};
static_assert(kForms[0].layout.bytes == 296 && kForms[1].layout.bytes == 360 &&
              kForms[2].layout.bytes == 212 && kForms[3].layout.bytes == 276);

const Form* find_form(GgmlType type) {
  for (const Form& f : kForms)
    if (f.layout.type == type) return &f;
  return nullptr;
}

// The form of `type`; an Error names a type without one.
const Form& form_of(GgmlType type) {
  const Form* f = find_form(type);
  if (!f) fail("linear_int8: {} has no int8 form", format_of(type).name);
  return *f;
}

// A group's copy from its blocks' parts (the layout in the header), a word at a time.
void write_group(const LinearInt8Layout& f, const BlockParts* parts, uint8_t* to) {
  const int64_t per_block = kLanes / f.blocks, elements = 4 * f.steps;
  const uint32_t high_mask = ((1u << f.high_bits) - 1) * 0x01010101u;
  for (int64_t m = 0; m < 2; ++m) {  // Q6_K's second half word is zero
    store_u16(to + f.d + 2 * m, m < f.blocks ? parts[m].d : 0);
    if (f.has_mins) store_u16(to + f.dmin + 2 * m, m < f.blocks ? parts[m].dmin : 0);
  }
  for (int64_t l = 0; l < kLanes; ++l) {
    const BlockParts& p = parts[l / per_block];
    const int64_t j = l % per_block;
    to[f.scales + l] = static_cast<uint8_t>(static_cast<int8_t>(p.scale[j]));
    if (f.has_mins) to[f.mins + l] = static_cast<uint8_t>(p.min[j]);
    const uint8_t* level = p.level.data() + elements * j;  // step s: the word at 4s
    for (int64_t g = 0; g < f.steps / 2; ++g)
      store_u32(to + f.codes + 4 * (kLanes * g + l),
                (load_u32(level + 8 * g) & kLow4) | (load_u32(level + 8 * g + 4) & kLow4) << 4);
    if (!f.high_bits) continue;
    uint32_t high = 0;
    for (int64_t s = 0; s < f.steps; ++s)
      high |= ((load_u32(level + 4 * s) >> 4) & high_mask) << (f.high_bits * s);
    store_u32(to + f.high + 4 * l, high);
  }
}

// Lane values of x, (rows, 1, groups, 16) float32: its scales and its scaled level sums over
// each lane's elements (a lane of 16 has its 32's scale, materialized twice: a gather otherwise).
struct LaneX {
  Tensor scale, sum;
};
LaneX lane_x(const Int8Rows& x, const LinearInt8Layout& f, int64_t groups) {
  const int64_t rows = x.words.size(0);
  const std::vector<int64_t> dims{rows, 1, groups, kLanes};
  if (4 * f.steps == kInt8Block) return {x.scale.reshape(dims), x.sum32.reshape(dims)};
  return {x.scale16.reshape(dims), x.sum16.reshape(dims)};
}

// A block's fp16 of the group's word at byte `at` (d or dmin) as float32 per lane: (1, out,
// groups, 16), with two blocks a choice of two broadcasts per half of the lanes.
Tensor per_block(const Tensor& w, const LinearInt8Layout& f, size_t at, int64_t out,
                 int64_t groups) {
  const int64_t n = out * groups, word = static_cast<int64_t>(at / 4);
  const Tensor v = w.shrink({{0, n}, {word, word + 1}}).reshape({1, out, groups, 1, 1});
  const std::vector<int64_t> halves{1, out, groups, f.blocks, kLanes / f.blocks};
  const std::vector<int64_t> dims{1, out, groups, kLanes};
  auto half = [&](int64_t h) {
    return (h ? idiv(v, 65536) : v & 0xFFFF)
        .cast(dtypes::uint16)
        .bitcast(dtypes::float16)
        .cast(dtypes::float32)
        .expand(halves);
  };
  if (f.blocks == 1) return half(0).reshape(dims);
  return upper_half(halves, 3, w.device()).where(half(1), half(0)).reshape(dims);
}

// The group's 16 int8 bytes at `at` per lane as float32: (1, out, groups, 16).
Tensor lane_bytes(const Tensor& raw, const LinearInt8Layout& f, size_t at, int64_t out,
                  int64_t groups) {
  return Blocks(raw.reshape({out * groups, static_cast<int64_t>(f.bytes)}))
      .bytes(at, kLanes)
      .reshape({1, out, groups, kLanes})
      .bitcast(dtypes::int8)
      .cast(dtypes::float32);
}

// Per lane of each group, (rows, out, groups * 16): the lane's DOT4s summed in int32 over its
// steps, times d * scale * x's scale, less the offset's and the min's terms over x's level sums.
Tensor lane_terms(const Int8Rows& x, const LinearInt8Layout& f, const Tensor& raw,
                  const Tensor& words, int64_t out, int64_t groups) {
  const int64_t rows = x.words.size(0), n = out * groups;
  const std::vector<int64_t> dims{1, out, groups, kLanes};
  const Tensor w = words.reshape({n, static_cast<int64_t>(f.bytes / 4)});
  auto lane_words = [&](size_t at) {
    const auto first = static_cast<int64_t>(at / 4);
    return w.shrink({{0, n}, {first, first + kLanes}}).reshape(dims);
  };
  const Tensor xw = linear_int8_x_words(x, f.type).reshape({rows, 1, groups, f.steps, kLanes});
  const uint32_t high_mask = ((1u << f.high_bits) - 1) * 0x10101010u;
  const Tensor high = f.high_bits ? lane_words(f.high) : Tensor();
  Tensor dots;
  for (int64_t s = 0; s < f.steps; ++s) {
    const Tensor codes = lane_words(f.codes + 4 * kLanes * (s / 2));
    Tensor level = (s % 2 ? idiv(codes, 16) : codes) & 0x0F0F0F0F;
    if (f.type == GgmlType::IQ4_XS) level = byte_lut(level, kIQ4NLOffsetLevels);
    if (f.high_bits) {  // bits 4.. of each byte from bits high_bits * s.. of the high word
      const int64_t up = 4 - f.high_bits * s;
      level = level + ((up >= 0 ? high * (int64_t{1} << up) : idiv(high, int64_t{1} << -up)) &
                       static_cast<int64_t>(high_mask));
    }
    const Tensor xs = xw.shrink({{0, rows}, {0, 1}, {0, groups}, {s, s + 1}, {0, kLanes}})
                          .reshape({rows, 1, groups, kLanes});
    const Tensor dl = dot4(level, xs);
    dots = s ? dots + dl : dl;
  }
  const LaneX xl = lane_x(x, f, groups);
  const Tensor scale =
      per_block(w, f, f.d, out, groups) * lane_bytes(raw, f, f.scales, out, groups);
  Tensor terms =
      f.offset
          ? (dots.cast(dtypes::float32) * xl.scale - static_cast<double>(f.offset) * xl.sum) * scale
          : dots.cast(dtypes::float32) * (scale * xl.scale);
  if (f.has_mins)
    terms = terms -
            per_block(w, f, f.dmin, out, groups) * lane_bytes(raw, f, f.mins, out, groups) * xl.sum;
  return terms.reshape({rows, out, groups * kLanes});
}

}  // namespace

const LinearInt8Layout& linear_int8_layout(GgmlType type) { return form_of(type).layout; }

Tensor linear_int8_x_words(const Int8Rows& x, GgmlType type) {
  const LinearInt8Layout& f = linear_int8_layout(type);
  const int64_t rows = x.q.size(0), in = x.q.size(1) * kInt8Block, group = kLanes * 4 * f.steps;
  if (in % group != 0)
    fail("linear_int8: {} reads x in runs of {} values, x has {} per row", format_of(type).name,
         group, in);
  // (rows, group, lane, step, byte) -> (rows, group, step, lane, byte)
  Tensor q = x.q.reshape({rows, in / group, kLanes, f.steps, 4}).permute({0, 1, 3, 2, 4});
  // Materialized: the DOT4 matvec's vector loads read x's words in the weights' lane order.
  return level_words(q).reshape({rows, in / 4}).bitcast(dtypes::int32).contiguous();
}

bool int8_activations(GgmlType type) {
  return find_form(type) != nullptr || type == GgmlType::Q8_0;
}

bool linear_int8_supports(GgmlType type, int64_t in) {
  const Form* f = find_form(type);
  return f && in > 0 && in % (f->layout.blocks * kQK_K) == 0;
}

int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in) {
  const LinearInt8Layout& f = linear_int8_layout(type);
  return out * (in / kQK_K) / f.blocks * static_cast<int64_t>(f.bytes);
}

Tensor linear_int8(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                   int64_t out, int64_t in) {
  const QuantFormat& q = format_of(type);
  if (!linear_int8_supports(type, in))
    fail("linear_int8: {} rows of {} inputs have no int8 form", q.name, in);
  const LinearInt8Layout& f = linear_int8_layout(type);
  const int64_t groups = in / kQK_K / f.blocks, bytes = linear_int8_bytes(type, out, in);
  if (raw.dtype() != dtypes::uint8 || raw.numel() != bytes || words.dtype() != dtypes::uint32 ||
      words.numel() * 4 != bytes)
    fail("linear_int8: {} ({}, {}) needs {} bytes as uint8 and uint32 words, got {} {} and {} {}",
         q.name, out, in, bytes, raw.numel(), to_string(raw.dtype()), words.numel(),
         to_string(words.dtype()));
  if (x.words.ndim() != 2 || x.words.size(1) * 4 != in)
    fail("linear_int8: {} inputs, x has {}", in, shape_str(x.words.shape()));
  return lane_terms(x, f, raw, words, out, groups).sum({-1});
}

void iq4_xs_codes(const uint8_t* block, uint8_t* codes) {
  // Sub-block j, element l and 16 + l: the low and high nibble of qs[16j + l].
  const uint8_t* qs = block + iq4_xs::kQs;
  for (int64_t j = 0; j < kQK_K / iq4_xs::kSubBlock; ++j)
    for (int64_t l = 0; l < 16; ++l) {
      codes[32 * j + l] = qs[16 * j + l] & 15;
      codes[32 * j + 16 + l] = qs[16 * j + l] >> 4;
    }
}

std::shared_ptr<std::byte> reorder_linear_int8(GgmlType type, std::span<const std::byte> blocks) {
  const Form& form = form_of(type);
  const LinearInt8Layout& f = form.layout;
  const QuantFormat& q = format_of(type);
  const size_t group = f.blocks * q.block_bytes;
  if (blocks.empty() || blocks.size() % group != 0)
    fail("linear_int8: {} bytes are not whole groups of {} {} block(s) of {} bytes", blocks.size(),
         f.blocks, q.name, q.block_bytes);
  const auto n = static_cast<int64_t>(blocks.size() / group);
  static HugePageArena arena;
  std::shared_ptr<std::byte> copy =
      arena.allocate(static_cast<size_t>(n) * f.bytes, "int8 linear's reordered blocks");
  const auto* src = reinterpret_cast<const uint8_t*>(blocks.data());
  auto* dst = reinterpret_cast<uint8_t*>(copy.get());
  ThreadPool::instance().parallel_for(n, [&](int64_t begin, int64_t end) {
    std::array<BlockParts, 2> parts;
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t m = 0; m < f.blocks; ++m)
        form.parts(src + i * group + m * q.block_bytes, parts[static_cast<size_t>(m)]);
      write_group(f, parts.data(), dst + i * f.bytes);
    }
  });
  return copy;
}

}  // namespace ugrad::llm
