#include "llm/quant/matmul_int8.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "llm/quant/layout.h"
#include "llm/quant/linear_int8.h"
#include "runtime/thread_pool.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kPair = 64;                      // values per pair of sub-blocks
constexpr int64_t kPairWords = kPair / 8;          // nibble words per pair
constexpr int64_t kPairsPerBlock = kQK_K / kPair;  // pairs per super-block
static_assert(kInt8Block * 2 == kPair, "x's scales: two per pair");
// A pair's words, and its scales or mins, at most (Q8_0: 16 words; Q6_K: 4 scales).
using PairWords = uint32_t[2 * kPairWords];
using PairScales = float[4];

// Nibble word w of a pair: byte k holds level 4w + k of the low sub-block in its low nibble and
// the high sub-block's in its high nibble (Q4_K's own layout).
uint32_t nibble_word(const uint8_t* low, const uint8_t* high, int64_t w) {
  return (load_u32(low + 4 * w) & 0x0F0F0F0Fu) | (load_u32(high + 4 * w) & 0x0F0F0F0Fu) << 4;
}

// Q4_K, Q6_K and IQ4_XS, from the block's parts (layout.h): a pair's nibble words of its levels'
// low 4 bits (Q4_K's own layout); Q6_K's 4 words of their high 2 bits, byte k of high word i
// holding those of low-sub-block level 4i + k (bits 0-1), the high sub-block's (2-3), and of
// levels 4(i + 4) + k likewise (4-5, 6-7); d * scale per sub-block, dmin * min. The offsets (Q6_K's
// 32, IQ4_XS's table) are the kernel's.
void pack_k(const BlockLayout& l, const uint8_t* block, PairWords* words, PairScales* scales,
            PairScales* mins) {
  BlockParts parts;
  take_apart(l, block, parts);
  const float d = half_to_float(parts.d), dmin = half_to_float(parts.m);
  const int64_t subs = kPair / l.sub_block;
  for (int64_t j = 0; j < kPairsPerBlock; ++j) {
    const uint8_t* lo = parts.quant.data() + kPair * j;
    for (int64_t w = 0; w < kPairWords; ++w) words[j][w] = nibble_word(lo, lo + 32, w);
    for (int64_t s = 0; s < subs; ++s) {
      scales[j][s] = d * float(parts.scale[subs * j + s]);
      mins[j][s] = dmin * float(parts.min[subs * j + s]);
    }
    if (l.quant.n_planes < 2) continue;
    const auto bits54 = [&](int64_t at) { return (load_u32(lo + at) >> 4) & 0x03030303u; };
    for (int64_t i = 0; i < 4; ++i) {
      const uint32_t word = bits54(4 * i) | bits54(32 + 4 * i) << 2 | bits54(16 + 4 * i) << 4 |
                            bits54(48 + 4 * i) << 6;
      words[j][kPairWords + i] = word;
    }
  }
}

// Q8_0: a pair is two blocks, whose 32 int8 quants are stored plus 128 (vpdpbusd takes the
// weight's bytes unsigned; the kernel takes 128 * x's sum32 off, IQ4_XS's offset), 8 words each;
// d per block.
static_assert(kIQ4NLOffset == 0x80, "Q8_0's offset flips each byte's top bit");
void pack_q8_0(const BlockLayout&, const uint8_t* blocks, PairWords* words, PairScales* scales,
               PairScales*) {
  for (int64_t j = 0; j < kPairsPerBlock; ++j)
    for (int64_t h = 0; h < 2; ++h) {
      const uint8_t* block = blocks + (2 * j + h) * static_cast<int64_t>(q8_0::kBytes);
      scales[j][h] = load_f16(block + q8_0::kD);
      for (int64_t w = 0; w < kPairWords; ++w)
        words[j][kPairWords * h + w] = load_u32(block + q8_0::kQs + 4 * w) ^ 0x80808080u;
    }
}

// A format's packed pair: its words of levels, scales and mins per pair (the layout in the
// header, with these counts).
struct Packing {
  GgmlType type;
  int64_t words, scales, mins;
  size_t block_bytes;  // of 256 elements (Q8_0: 8 blocks)
  // The pairs of 256 elements.
  void (*pack)(const BlockLayout& l, const uint8_t* block, PairWords* words, PairScales* scales,
               PairScales* mins);
};
constexpr Packing kPackings[] = {
    {GgmlType::Q4_K, kPairWords, 2, 2, q4_k::kBytes, pack_k},
    {GgmlType::Q6_K, kPairWords + 4, 4, 0, q6_k::kBytes, pack_k},
    {GgmlType::IQ4_XS, kPairWords, 2, 0, iq4_xs::kBytes, pack_k},
    {GgmlType::Q8_0, 2 * kPairWords, 2, 0, (kQK_K / kQK) * q8_0::kBytes, pack_q8_0},
};

const Packing* packing_of(GgmlType type) {
  for (const Packing& p : kPackings)
    if (p.type == type) return &p;
  return nullptr;
}

}  // namespace

bool matmul_int8_supports(GgmlType type, int64_t in) {
  return packing_of(type) && in > 0 && in % (kPair * kMatmulInt8Pairs) == 0;
}

int64_t packed_bytes(GgmlType type, int64_t out, int64_t in) {
  const Packing& p = *packing_of(type);
  return out * (in / kPair) * (p.words + p.scales + p.mins) * 4;
}

PackedInt8Weight pack_matmul_int8(GgmlType type, std::span<const std::byte> blocks, int64_t out,
                                  int64_t in, const std::string& device) {
  const QuantFormat& f = format_of(type);
  if (!matmul_int8_supports(type, in) || out <= 0)
    fail("matmul_int8: {} ({}, {}) has no packed int8 form", f.name, out, in);
  const Packing& p = *packing_of(type);
  const BlockLayout& l = *block_layout(type);
  const int64_t nb = in / kQK_K, g_count = in / kPair;
  const int64_t bytes = out * nb * static_cast<int64_t>(p.block_bytes);
  if (static_cast<int64_t>(blocks.size()) != bytes)
    fail("matmul_int8: {} ({}, {}) needs {} bytes, got {}", f.name, out, in, bytes, blocks.size());
  // One buffer in huge pages (base/huge_pages.h): words, then scales, then mins, each of 4-byte
  // elements; the packing's threads fault it in.
  static HugePageArena arena;
  const int64_t n_words = out * p.words * g_count, n_scales = out * p.scales * g_count,
                n_mins = out * p.mins * g_count;
  std::shared_ptr<std::byte> buffer = arena.allocate(
      static_cast<size_t>(packed_bytes(type, out, in)), fmt::format("a packed {} weight", f.name));
  auto* words = reinterpret_cast<uint32_t*>(buffer.get());
  auto* scales = reinterpret_cast<float*>(words + n_words);
  float* mins = scales + n_scales;
  const auto* src = reinterpret_cast<const uint8_t*>(blocks.data());
  ThreadPool::instance().parallel_for(out, [&](int64_t begin, int64_t end) {
    PairWords pw[kPairsPerBlock];
    PairScales ps[kPairsPerBlock], pm[kPairsPerBlock];
    for (int64_t o = begin; o < end; ++o)
      for (int64_t b = 0; b < nb; ++b) {
        p.pack(l, src + (o * nb + b) * static_cast<int64_t>(p.block_bytes), pw, ps, pm);
        for (int64_t j = 0; j < kPairsPerBlock; ++j) {
          const int64_t g = b * kPairsPerBlock + j;
          for (int64_t i = 0; i < p.words; ++i) words[(o * p.words + i) * g_count + g] = pw[j][i];
          for (int64_t i = 0; i < p.scales; ++i)
            scales[(o * p.scales + i) * g_count + g] = ps[j][i];
          for (int64_t i = 0; i < p.mins; ++i) mins[(o * p.mins + i) * g_count + g] = pm[j][i];
        }
      }
  });
  auto part = [&](int64_t first, int64_t count, int64_t per, DType dtype) {
    if (count == 0) return Tensor();
    return Tensor::from_host_memory({buffer.get() + first * 4, static_cast<size_t>(count) * 4},
                                    {out, per, g_count}, dtype, device, buffer);
  };
  return {type, part(0, n_words, p.words, dtypes::uint32),
          part(n_words, n_scales, p.scales, dtypes::float32),
          part(n_words + n_scales, n_mins, p.mins, dtypes::float32)};
}

Int8Pairs quantize_pairs_int8(const Tensor& x) {
  if (x.ndim() != 2 || x.size(1) % kPair != 0)
    fail("matmul_int8: need rows of a multiple of {} values, got {}", kPair, shape_str(x.shape()));
  const int64_t rows = x.size(0), g_count = x.size(1) / kPair;
  const Int8Levels l = int8_levels(x);
  // Materialized with the pairs innermost: each lane group's loads are then contiguous.
  const Tensor words = level_words(l.q.reshape({rows, g_count, 2 * kPairWords, 4}))
                           .reshape({rows, g_count, 2 * kPairWords})
                           .permute({0, 2, 1})
                           .bitcast(dtypes::int32)
                           .contiguous();
  const Tensor scale = l.scale.reshape({rows, g_count, 2, 1});
  // The sums of 16 (one reduce), and of 32 as pairs of them; with the scales one buffer in the
  // GEMM's order (materialized: the cat's selects are not evaluated per output column).
  const Tensor sum16 =
      l.q.reshape({rows, g_count, 2, 2, kInt8Block / 2}).sum({-1}).cast(dtypes::float32) * scale;
  const Tensor sum32 = sum16.shrink({{0, rows}, {0, g_count}, {0, 2}, {0, 1}}) +
                       sum16.shrink({{0, rows}, {0, g_count}, {0, 2}, {1, 2}});
  return {words, cat({scale.reshape({rows, g_count, 2}), sum32.reshape({rows, g_count, 2}),
                      sum16.reshape({rows, g_count, 4})},
                     2)
                     .permute({0, 2, 1})
                     .contiguous()};
}

Tensor matmul_int8(const Int8Pairs& x, const PackedInt8Weight& w) {
  const int64_t rows = x.words.size(0), out = w.words.size(0), g_count = w.words.size(2);
  if (x.words.ndim() != 3 || x.words.size(2) != g_count)
    fail("matmul_int8: {} inputs, x has {} pairs", g_count * kPair,
         x.words.ndim() == 3 ? x.words.size(2) : 0);
  const Tensor xw = x.words.reshape({rows, 1, 2 * kPairWords, g_count}),
               xs = x.sums.reshape({rows, 1, 8, g_count});
  // Words [first, first + count) along axis 2 (word i alone: count 1).
  auto words = [&](const Tensor& t, int64_t first, int64_t count) {
    return t.shrink({{0, t.size(0)}, {0, t.size(1)}, {first, first + count}, {0, g_count}});
  };
  auto at = [&](const Tensor& t, int64_t i) { return words(t, i, 1); };
  const Tensor q = w.words.reshape({1, out, w.words.size(1), g_count}),
               scales = w.scales.reshape({1, out, w.scales.size(1), g_count});
  // The level words of the low and of the high sub-block, each (1, out, 8, G): Q8_0's as packed,
  // the others' from the nibble words.
  const Tensor low = words(q, 0, kPairWords);
  Tensor levels[2];
  if (w.type == GgmlType::Q8_0)
    levels[0] = low, levels[1] = words(q, kPairWords, kPairWords);
  else
    levels[0] = low & 0x0F0F0F0F, levels[1] = idiv(low, 16) & 0x0F0F0F0F;
  if (w.type == GgmlType::IQ4_XS)
    for (Tensor& l : levels) l = byte_lut(l, kIQ4NLOffsetLevels);
  if (w.type == GgmlType::Q6_K) {
    // High bits: word i's are bits 4(i / 4) + 2h.. of high word i % 4.
    const Tensor high = words(q, kPairWords, 4);
    const Tensor by_word = cat({high, idiv(high, 16)}, 2);
    for (int64_t h = 0; h < 2; ++h)
      levels[h] = levels[h] + ((h ? idiv(by_word, 4) : by_word) & 0x03030303) * 16;
  }
  // Sub-block h's products of words [first, first + count) as a sum of DOT4s, not a reduce: one
  // int32 chain per lane (codegen folds each addition into the vpdpbusd that accumulates),
  // converted once.
  auto products = [&](int64_t h, int64_t first, int64_t count) {
    const Tensor p = dot4(words(levels[h], first, count), words(xw, h * kPairWords + first, count));
    Tensor acc = at(p, 0);
    for (int64_t i = 1; i < count; ++i) acc = acc + at(p, i);
    return acc.cast(dtypes::float32);
  };
  Tensor terms;
  for (int64_t h = 0; h < 2; ++h) {
    // x's sums row: scale of sub-block h at h, its sum32 at 2 + h, its sums of 16 at 4 + 2h..
    Tensor t;
    if (w.type == GgmlType::Q4_K) {
      const Tensor mins = w.mins.reshape({1, out, 2, g_count});
      t = products(h, 0, kPairWords) * (at(scales, h) * at(xs, h)) - at(mins, h) * at(xs, 2 + h);
    } else if (w.type == GgmlType::IQ4_XS || w.type == GgmlType::Q8_0) {  // levels offset by 128
      t = at(scales, h) * (products(h, 0, kPairWords) * at(xs, h) -
                           static_cast<double>(kIQ4NLOffset) * at(xs, 2 + h));
    } else {  // Q6_K: two groups of 16 per sub-block, levels offset by 32
      for (int64_t s = 0; s < 2; ++s) {
        const Tensor ds = at(scales, 2 * h + s);
        const Tensor u = ds * (products(h, 4 * s, 4) * at(xs, h) -
                               static_cast<double>(q6_k::kOffset) * at(xs, 4 + 2 * h + s));
        t = s ? t + u : u;
      }
    }
    terms = h ? terms + t : t;
  }
  return terms.reshape({rows, out, g_count}).sum({-1});
}

}  // namespace ugrad::llm
