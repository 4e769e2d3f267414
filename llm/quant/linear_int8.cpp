#include "llm/quant/linear_int8.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/huge_pages.h"
#include "llm/quant/block_exprs.h"
#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"
#include "runtime/thread_pool.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kWords = kQK_K / 4;  // level words per super-block
static_assert(kInt8Block == 32, "x's scales fall on every 8th word");

// x's int8 rows over the super-blocks of a weight row (or over every other one: `parity` 0 or 1
// of blocks taken in pairs; -1 all), each view (rows, 1, blocks, per super-block).
struct XBlocks {
  Tensor words;  // (.., 64) int32
  Tensor scale;  // (.., 8) float32, per 32 values
  Tensor sum32;  // (.., 8)
  Tensor sum16;  // (.., 16)
};

XBlocks x_blocks(const Int8Rows& x, int64_t nb, int parity) {
  const int64_t rows = x.words.size(0), blocks = parity < 0 ? nb : nb / 2;
  auto view = [&](const Tensor& t, int64_t per) {
    if (parity < 0) return t.reshape({rows, 1, nb, per});
    return t.reshape({rows, blocks, 2, per})
        .shrink({{0, rows}, {0, blocks}, {parity, parity + 1}, {0, per}})
        .reshape({rows, 1, blocks, per});
  };
  return {view(x.words, kWords), view(x.scale, 8), view(x.sum32, 8), view(x.sum16, 16)};
}

// The product of `factors`, each (A or 1, B or 1, nb, S): S values per super-block each over its
// 64 / S consecutive words, as (A, B, nb * 64): each value one lane group's broadcast load where a
// group of `lanes` words lies within it; where a group spans two values (Q6_K's sub-blocks of 16
// in 8 lanes, sub-blocks of 32 in 16), a choice between the two broadcasts per half of the group
// (a gather would cost the lanes), each half its own product. uint8 factors are int8 bytes, each
// read from a table (see six_bit_floats) where the group broadcasts it: converted in place, each
// took a sign extension, a conversion and a broadcast. (Multiplied before the choice, a product
// with a table read was realized by a kernel of its own.)
Tensor over_words(const std::vector<Tensor>& factors, int64_t lanes) {
  std::vector<int64_t> d = factors[0].dims();
  for (const Tensor& f : factors)
    for (size_t i = 0; i < 2; ++i) d[i] = std::max(d[i], f.size(static_cast<int64_t>(i)));
  const int64_t s = d[3], per = kWords / s, flat = d[2] * kWords;
  // The product of the factors' views made by `view`, in float.
  auto product = [&](const auto& view) {
    Tensor p;
    for (const Tensor& f : factors) {
      Tensor v = view(f);
      if (v.dtype() == dtypes::uint8) v = int8_floats(v);
      p = p.defined() ? p * v : v;
    }
    return p;
  };
  if (lanes <= per)
    return product([&](const Tensor& f) {
             return f.reshape({f.size(0), f.size(1), d[2], s, 1});
           })
        .expand({d[0], d[1], d[2], s, per})
        .reshape({d[0], d[1], flat});
  if (lanes != 2 * per) fail("linear_int8: {} lanes over values of {} words", lanes, per);
  const std::vector<int64_t> dims{d[0], d[1], d[2] * s / 2, 2, per};
  auto half = [&](int64_t h) {
    return product([&](const Tensor& f) {
             const int64_t a = f.size(0), b = f.size(1);
             return f.reshape({a, b, d[2] * s / 2, 2, 1})
                 .shrink({{0, a}, {0, b}, {0, d[2] * s / 2}, {h, h + 1}, {0, 1}});
           })
        .expand(dims);
  };
  return upper_half(dims, 3, factors[0].device())
      .where(half(1), half(0))
      .reshape({d[0], d[1], flat});
}

// dot4 of each of the (1, out, nb, 64) uint32 `levels` with x's word: (rows, out, nb * 64) int32.
Tensor level_dots(const XBlocks& x, const Tensor& levels) {
  const int64_t rows = x.words.size(0), out = levels.size(1), k4 = levels.size(2) * kWords;
  return dot4(levels.reshape({1, out, k4}), x.words.reshape({rows, 1, k4}));
}

// The sum over a K format's super-blocks, per word w: `dots` (level_dots) * (d * x's scale) *
// sub-block scale, plus the sub-blocks' constant terms (their offsets or mins times x's level
// sums), one per sub-block. `d` (1, out, nb, 1), `sc` (1, out, nb, S) float32 (Q6_K's: its int8
// scales as uint8 bytes), `constants` (rows, out, nb, S') or undefined (none), `lanes` the words
// of a vector that the levels' layout allows (8, or 16 where 16 consecutive level words come from
// 16 consecutive words of the weight): (rows, out, nb * 64) for a reduce over the last axis.
Tensor k_terms(const XBlocks& x, const Tensor& dots, const Tensor& d, const Tensor& sc,
               const Tensor& constants, int64_t lanes) {
  const int64_t rows = dots.size(0), out = dots.size(1), nb = sc.size(2), k4 = nb * kWords;
  // d * dx is shared by a sub-block's 8 words; the product by the sub-block scale is its own
  // multiply-add.
  Tensor pd = dots.cast(dtypes::float32) * over_words({d * x.scale}, lanes);
  Tensor scale = over_words({sc}, lanes);
  if (!constants.defined()) return pd * scale;
  // The S' constant terms sit in the super-block's first S' words, zero in the others (the reduce
  // adds them all): one vector of them per super-block rather than a term per word (which ran
  // 15-20% slower on Q4_K, bound by instruction issue).
  const int64_t c = constants.size(3);
  Tensor placed = constants.reshape({rows, out, nb, 1, c})
                      .pad({{0, 0}, {0, 0}, {0, 0}, {0, kWords / c - 1}, {0, 0}})
                      .reshape({rows, out, k4});
  return pd * scale + placed;
}

// Nibbles from the 32 words at word `qs` of each of the n blocks `w` (n, words per block), in
// runs of `run` words: run g's low nibbles are level words 2g * run.., its high nibbles the next
// run of them; (n, 32 / run, 2, run). Q4_K's runs are 8 words (sub-block 2g low, 2g + 1 high).
Tensor nibble_runs(const Tensor& w, int64_t qs, int64_t run) {
  const int64_t n = w.size(0), runs = 32 / run;
  return shift_upper(
             w.shrink({{0, n}, {qs, qs + 32}}).reshape({n, runs, 1, run}).expand({n, runs, 2, run}),
             2, 4) &
         0x0F0F0F0F;
}

// Q4_K and Q5_K (the same scales, mins and nibbles; Q5_K adds a fifth bit from qh).
Tensor k4_terms(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                int64_t out, int64_t nb) {
  const bool q5 = type == GgmlType::Q5_K;
  const int64_t bytes = q5 ? q5_k::kBytes : q4_k::kBytes, per_block = bytes / 4, n = out * nb;
  Blocks b(raw.reshape({n, bytes}));
  Tensor w = words.reshape({n, per_block});
  const std::vector<int64_t> dims{n, 4, 2, 8};
  Tensor level = nibble_runs(w, (q5 ? q5_k::kQs : q4_k::kQs) / 4, 8);
  if (q5) {
    // Sub-block j = 4g1 + 2g0 + h takes bit j of each qh byte: shifts chosen per bit of j.
    const int64_t qh = q5_k::kQh / 4;
    Tensor high = w.shrink({{0, n}, {qh, qh + 8}}).reshape({n, 1, 1, 1, 8}).expand({n, 2, 2, 2, 8});
    high = shift_upper(shift_upper(shift_upper(high, 1, 4), 2, 2), 3, 1) & 0x01010101;
    level = level + high.reshape(dims) * 16;
  }
  // The scales as the float kernel reads them: a byte load per scale byte, bit math in int32 and
  // one broadcast load per value from the table of 0..63. Tables indexed by the bytes themselves
  // ran 11% slower on Zen 5 both ways tried: a float per term (two terms for sub-blocks 4..7, 24
  // broadcast loads per super-block where scales and mins took 16 this way), and one load per
  // scale from a 256-entry and a 1024-entry table (indexed by byte j, and by 4 * byte j+4 +
  // (byte j-4 >> 6) for j >= 4).
  static_assert(q4_k::kScales == q5_k::kScales && q4_k::kD == q5_k::kD &&
                q4_k::kDmin == q5_k::kDmin);
  const auto scales_mins = scales_mins_k4(b, q4_k::kScales);
  const Tensor sc = six_bit_floats(scales_mins).first.reshape({1, out, nb, 8});
  // The mins' term -dmin * m_j * sum32_j of sub-block j: the 8 mins are one vector, bit math on
  // the 8 contiguous bytes each half of them reads and one conversion.
  const XBlocks xb = x_blocks(x, nb, -1);
  Tensor m = scales_mins.second.cast(dtypes::float32).reshape({1, out, nb, 8});
  Tensor mins = -b.f16(q4_k::kDmin).reshape({1, out, nb, 1}) * m * xb.sum32;
  return k_terms(xb, level_dots(xb, level.reshape({1, out, nb, kWords})),
                 b.f16(q4_k::kD).reshape({1, out, nb, 1}), sc, mins, 8);
}

// IQ4_XS in reorder_iq4_xs's order: runs of 16 nibble words, each code's level plus 128 from
// the table (the weight side of DOT4 is unsigned), per sub-block d * (ls - 32) * x's scale, one
// product spread over the sub-block's words. 16 consecutive level words read 16 consecutive words
// of the weight: vectors of 16 lanes.
Tensor iq4_xs_terms(const Int8Rows& x, const Tensor& raw, const Tensor& words, int64_t out,
                    int64_t nb) {
  namespace r = iq4_xs_reordered;
  const int64_t n = out * nb;
  Tensor w = words.reshape({n, r::kBytes / 4});
  Tensor level = byte_lut(nibble_runs(w, r::kQs / 4, 16), kIQ4NLOffsetLevels);
  const XBlocks xb = x_blocks(x, nb, -1);
  // The offset leaves each word's product in integers: dot4 with 4 bytes of 128 subtracted. (A
  // term per sub-block, as the K formats' offsets, would sit in 8 of a vector's 16 lanes: its
  // uniform loads gated per lane would cost the vector.)
  const std::vector<int64_t> dims{1, out, nb, kWords};
  const Tensor offset =
      Tensor::full({1, 1, 1, 1}, int64_t{0x01010101} * kIQ4NLOffset, dtypes::uint32, raw.device())
          .expand(dims);
  const Tensor dots = level_dots(xb, level.reshape(dims)) - level_dots(xb, offset);
  Tensor d = w.shrink({{0, n}, {r::kD / 4, r::kD / 4 + 1}}).bitcast(dtypes::float32);
  Tensor sc = Blocks(raw.reshape({n, r::kBytes})).bytes(r::kScales, 8).reshape({1, out, nb, 8});
  return dots.cast(dtypes::float32) * over_words({d.reshape({1, out, nb, 1}) * xb.scale, sc}, 16);
}

// Q6_K: element 128h + 32(2qhi + qlo) + l is nibble qhi of ql[64h + 32qlo + l] and bits
// 2(2qhi + qlo).. of qh[32h + l], minus 32, times the int8 scale of its 16. A block is 210 bytes,
// so blocks come in pairs of 105 words: the first's words are aligned, the second's start 2
// bytes into word 52, each a funnel of two aligned words.
Tensor q6_k_terms(const Int8Rows& x, const Tensor& raw, const Tensor& words, int64_t out,
                  int64_t nb) {
  const int64_t pair = 2 * q6_k::kBytes, pairs = out * nb / 2, quant_words = 48;
  Blocks b(raw.reshape({pairs, pair}));
  Tensor w = words.reshape({pairs, pair / 4});
  Tensor sum;
  for (int parity = 0; parity < 2; ++parity) {
    Tensor q;
    if (parity == 0) {
      q = w.shrink({{0, pairs}, {0, quant_words}});
    } else {
      const int64_t at = q6_k::kBytes / 4;  // word 52: bytes 208..211, the block's first two last
      Tensor lo = w.shrink({{0, pairs}, {at, at + quant_words}});
      Tensor hi = w.shrink({{0, pairs}, {at + 1, at + 1 + quant_words}});
      q = idiv(lo, int64_t{1} << 16) + (hi & 0xFFFF) * (int64_t{1} << 16);
    }
    const std::vector<int64_t> dims{pairs, 2, 2, 2, 8};  // (h, qhi, qlo, word of 8)
    Tensor ql = q.shrink({{0, pairs}, {0, 32}}).reshape({pairs, 2, 1, 2, 8}).expand(dims);
    Tensor qh = q.shrink({{0, pairs}, {32, 48}}).reshape({pairs, 2, 1, 1, 8}).expand(dims);
    Tensor level = (shift_upper(ql, 2, 4) & 0x0F0F0F0F) +
                   (shift_upper(shift_upper(qh, 2, 4), 3, 2) & 0x03030303) * 16;
    const size_t base = static_cast<size_t>(parity) * q6_k::kBytes;
    Tensor d = b.f16(base + q6_k::kD).reshape({1, out, nb / 2, 1});
    Tensor sc = b.bytes(base + q6_k::kScales, 16).reshape({1, out, nb / 2, 16});
    const XBlocks xb = x_blocks(x, nb, parity);
    // The offsets' term takes the 16 scales as one vector: converted in place (a table read by
    // 16 lanes would be a gather).
    Tensor offsets = -static_cast<double>(q6_k::kOffset) * d *
                     sc.bitcast(dtypes::int8).cast(dtypes::float32) * xb.sum16;
    Tensor t =
        k_terms(xb, level_dots(xb, level.reshape({1, out, nb / 2, kWords})), d, sc, offsets, 8);
    sum = parity ? sum + t : t;
  }
  return sum;
}

}  // namespace

bool int8_activations(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ||
         type == GgmlType::IQ4_XS;
}

bool linear_int8_supports(GgmlType type, int64_t in) {
  if (type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::IQ4_XS)
    return in > 0 && in % kQK_K == 0;
  if (type == GgmlType::Q6_K) return in > 0 && in % (2 * kQK_K) == 0;
  return false;
}

int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in) {
  const int64_t blocks = out * (in / kQK_K);
  return blocks * static_cast<int64_t>(type == GgmlType::IQ4_XS ? iq4_xs_reordered::kBytes
                                                                : format_of(type).block_bytes);
}

Tensor linear_int8(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                   int64_t out, int64_t in) {
  const QuantFormat& f = format_of(type);
  if (!linear_int8_supports(type, in))
    fail("linear_int8: {} rows of {} inputs have no int8 form", f.name, in);
  const int64_t nb = in / kQK_K, bytes = linear_int8_bytes(type, out, in);
  if (raw.dtype() != dtypes::uint8 || raw.numel() != bytes || words.dtype() != dtypes::uint32 ||
      words.numel() * 4 != bytes)
    fail("linear_int8: {} ({}, {}) needs {} bytes as uint8 and uint32 words, got {} {} and {} {}",
         f.name, out, in, bytes, raw.numel(), to_string(raw.dtype()), words.numel(),
         to_string(words.dtype()));
  if (x.words.ndim() != 2 || x.words.size(1) * 4 != in)
    fail("linear_int8: {} inputs, x has {}", in, shape_str(x.words.shape()));
  Tensor terms = type == GgmlType::Q6_K     ? q6_k_terms(x, raw, words, out, nb)
                 : type == GgmlType::IQ4_XS ? iq4_xs_terms(x, raw, words, out, nb)
                                            : k4_terms(x, type, raw, words, out, nb);
  return terms.sum({-1});
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

std::shared_ptr<std::byte> reorder_iq4_xs(std::span<const std::byte> blocks) {
  namespace r = iq4_xs_reordered;
  if (blocks.empty() || blocks.size() % iq4_xs::kBytes != 0)
    fail("linear_int8: {} bytes are not whole IQ4_XS blocks of {}", blocks.size(), iq4_xs::kBytes);
  const auto n = static_cast<int64_t>(blocks.size() / iq4_xs::kBytes);
  static HugePageArena arena;
  std::shared_ptr<std::byte> copy =
      arena.allocate(static_cast<size_t>(n) * r::kBytes, "IQ4_XS blocks reordered");
  const auto* src = reinterpret_cast<const uint8_t*>(blocks.data());
  auto* dst = reinterpret_cast<uint8_t*>(copy.get());
  ThreadPool::instance().parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t* block = src + i * iq4_xs::kBytes;
      uint8_t* to = dst + i * r::kBytes;
      const float d = load_f16(block + iq4_xs::kD);
      std::memcpy(to + r::kD, &d, sizeof d);
      for (int64_t j = 0; j < 8; ++j)
        to[r::kScales + j] = static_cast<uint8_t>(static_cast<int8_t>(iq4_xs_scale(block, j)));
      // The codes: byte b of half h, element 128h + b (low nibble) and 128h + 64 + b (high).
      uint8_t codes[kQK_K];
      iq4_xs_codes(block, codes);
      for (int64_t b = 0; b < kQK_K / 2; ++b) {
        const int64_t e = 128 * (b / 64) + b % 64;
        to[r::kQs + b] = static_cast<uint8_t>(codes[e] | codes[e + 64] << 4);
      }
    }
  });
  return copy;
}

}  // namespace ugrad::llm
