#include "llm/quant/linear_int8.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "base/huge_pages.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/layout.h"
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

// The copies are made at every load: write_group works a word (4 levels) at a time.
constexpr uint32_t kLow4 = 0x0F0F0F0F;

// Each format's copy.
constexpr std::array kForms{
    layout(GgmlType::Q4_K, 2, 8, 0, true, 0),
    layout(GgmlType::Q5_K, 2, 8, 1, true, 0),
    layout(GgmlType::Q6_K, 1, 4, 2, false, q6_k::kOffset),
    layout(GgmlType::IQ4_XS, 2, 8, 0, false, kIQ4NLOffset),
};
static_assert(kForms[0].bytes == 296 && kForms[1].bytes == 360 && kForms[2].bytes == 212 &&
              kForms[3].bytes == 276);

const LinearInt8Layout* find_form(GgmlType type) {
  for (const LinearInt8Layout& f : kForms)
    if (f.type == type) return &f;
  return nullptr;
}

// The form of `type`; an Error names a type without one.
const LinearInt8Layout& form_of(GgmlType type) {
  const LinearInt8Layout* f = find_form(type);
  if (!f) fail("linear_int8: {} has no int8 form", format_of(type).name);
  return *f;
}

// A group's copy from its blocks' parts (the layout in the header), a word at a time.
void write_group(const LinearInt8Layout& f, const BlockParts* parts, uint8_t* to) {
  const int64_t per_block = kLanes / f.blocks, elements = 4 * f.steps;
  const uint32_t high_mask = ((1u << f.high_bits) - 1) * 0x01010101u;
  for (int64_t m = 0; m < 2; ++m) {  // Q6_K's second half word is zero
    store_u16(to + f.d + 2 * m, m < f.blocks ? parts[m].d : 0);
    if (f.has_mins) store_u16(to + f.dmin + 2 * m, m < f.blocks ? parts[m].m : 0);
  }
  for (int64_t l = 0; l < kLanes; ++l) {
    const BlockParts& p = parts[l / per_block];
    const int64_t j = l % per_block;
    to[f.scales + l] = static_cast<uint8_t>(static_cast<int8_t>(p.scale[j]));
    if (f.has_mins) to[f.mins + l] = static_cast<uint8_t>(p.min[j]);
    const uint8_t* level = p.quant.data() + elements * j;  // step s: the word at 4s
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

const LinearInt8Layout& linear_int8_layout(GgmlType type) { return form_of(type); }

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
  const LinearInt8Layout* f = find_form(type);
  return f && in > 0 && in % (f->blocks * kQK_K) == 0;
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

std::shared_ptr<std::byte> reorder_linear_int8(GgmlType type, std::span<const std::byte> blocks) {
  const LinearInt8Layout& f = form_of(type);
  const BlockLayout& l = *block_layout(type);
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
        take_apart(l, src + i * group + m * q.block_bytes, parts[static_cast<size_t>(m)]);
      write_group(f, parts.data(), dst + i * f.bytes);
    }
  });
  return copy;
}

}  // namespace ugrad::llm
