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
// The words of a vector the K formats' file layouts allow (a file word's fields are level words 8
// or more apart).
constexpr int64_t kLanes = 8;
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

// t (A, B, nb, S), S values per super-block each over its 64 / S consecutive words, as (A, B,
// nb * 64): each value one lane group's broadcast load where a group of kLanes words lies within
// it; where a group spans two values (Q6_K's sub-blocks of 16), a choice between the two
// broadcasts per half of the group (a gather would cost the lanes).
// Q6_K's int8 scales come as bytes, each read from a table (see six_bit_floats) where the group
// broadcasts it: converted in place, each took a sign extension, a conversion and a broadcast.
Tensor over_words(const Tensor& t) {
  const std::vector<int64_t> d = t.dims();
  const int64_t s = d[3], per = kWords / s, flat = d[2] * kWords;
  auto as_float = [](const Tensor& u) { return u.dtype() == dtypes::uint8 ? int8_floats(u) : u; };
  if (kLanes <= per)
    return as_float(t)
        .reshape({d[0], d[1], d[2], s, 1})
        .expand({d[0], d[1], d[2], s, per})
        .reshape({d[0], d[1], flat});
  if (kLanes != 2 * per) fail("linear_int8: {} lanes over values of {} words", kLanes, per);
  const std::vector<int64_t> dims{d[0], d[1], d[2] * s / 2, 2, per};
  Tensor pairs = t.reshape({d[0], d[1], d[2] * s / 2, 2, 1});
  auto half = [&](int64_t h) {
    return as_float(pairs.shrink({{0, d[0]}, {0, d[1]}, {0, d[2] * s / 2}, {h, h + 1}, {0, 1}}))
        .expand(dims);
  };
  return upper_half(dims, 3, t.device()).where(half(1), half(0)).reshape({d[0], d[1], flat});
}

// dot4 of each of the (1, out, nb, 64) uint32 `levels` with x's word: (rows, out, nb * 64) int32.
Tensor level_dots(const XBlocks& x, const Tensor& levels) {
  const int64_t rows = x.words.size(0), out = levels.size(1), k4 = levels.size(2) * kWords;
  return dot4(levels.reshape({1, out, k4}), x.words.reshape({rows, 1, k4}));
}

// The sum over a K format's super-blocks, per word w: `dots` (level_dots) * (d * x's scale) *
// sub-block scale, plus the sub-blocks' constant terms (their offsets or mins times x's level
// sums), one per sub-block. `d` (1, out, nb, 1), `sc` (1, out, nb, S) float32 (Q6_K's: its int8
// scales as uint8 bytes), `constants` (rows, out, nb, S') or undefined (none): (rows, out, nb *
// 64) for a reduce over the last axis.
Tensor k_terms(const XBlocks& x, const Tensor& dots, const Tensor& d, const Tensor& sc,
               const Tensor& constants) {
  const int64_t rows = dots.size(0), out = dots.size(1), nb = sc.size(2), k4 = nb * kWords;
  // d * dx is shared by a sub-block's 8 words; the product by the sub-block scale is its own
  // multiply-add.
  Tensor pd = dots.cast(dtypes::float32) * over_words(d * x.scale);
  Tensor scale = over_words(sc);
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

// Nibbles from the `count` words at word `qs` of each of the n blocks `w` (n, words per block),
// in runs of `run` words: run g's low nibbles are level words 2g * run.., its high nibbles the
// next run of them; (n, count / run, 2, run). Q4_K's runs are 8 of 32 words (sub-block 2g low,
// 2g + 1 high).
Tensor nibble_runs(const Tensor& w, int64_t qs, int64_t count, int64_t run) {
  const int64_t n = w.size(0), runs = count / run;
  return shift_upper(w.shrink({{0, n}, {qs, qs + count}})
                         .reshape({n, runs, 1, run})
                         .expand({n, runs, 2, run}),
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
  Tensor level = nibble_runs(w, (q5 ? q5_k::kQs : q4_k::kQs) / 4, 32, 8);
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
                 b.f16(q4_k::kD).reshape({1, out, nb, 1}), sc, mins);
}

// IQ4_XS in reorder_iq4_xs's order, a pair of blocks at a time: lane l of a 16-word vector
// stays in sub-block l % 8 of block l / 8 over the pair's 8 steps, so its 8 DOT4s add up in
// integers and the factor d * scale * x's scale is one vector per pair (x's words are read in the
// same order, iq4_xs_x_words). Each code's level comes from the table plus 128 (the weight side of
// DOT4 is unsigned); the offset leaves the sum in integers: DOT4s of x's words with bytes of 128,
// subtracted.
Tensor iq4_xs_terms(const Int8Rows& x, const Tensor& raw, const Tensor& words, int64_t out,
                    int64_t nb) {
  namespace r = iq4_xs_reordered;
  constexpr int64_t kSteps = 8, kSubs = 16;  // a lane per sub-block of the pair
  const int64_t rows = x.words.size(0), pairs = nb / 2, n = out * pairs;
  Tensor w = words.reshape({n, r::kBytes / 4});
  const Tensor level =
      byte_lut(nibble_runs(w, r::kQs / 4, kSteps * kSubs / 2, kSubs), kIQ4NLOffsetLevels)
          .reshape({1, out, pairs, kSteps, kSubs});
  const Tensor xw = iq4_xs_x_words(x).reshape({rows, 1, pairs, kSteps, kSubs});
  const std::vector<int64_t> dims{1, out, pairs, kSubs};
  const Tensor offset =
      Tensor::full({1, 1, 1, 1}, int64_t{0x01010101} * kIQ4NLOffset, dtypes::uint32, raw.device())
          .expand(dims);
  Tensor dots, offsets;
  for (int64_t s = 0; s < kSteps; ++s) {
    auto step = [&](const Tensor& t) {
      const int64_t a = t.size(0), b = t.size(1);
      return t.shrink({{0, a}, {0, b}, {0, pairs}, {s, s + 1}, {0, kSubs}})
          .reshape({a, b, pairs, kSubs});
    };
    const Tensor xs = step(xw);
    Tensor dl = dot4(step(level), xs), doff = dot4(offset, xs);
    dots = s ? dots + dl : dl;
    offsets = s ? offsets + doff : doff;
  }
  Tensor d = w.shrink({{0, n}, {r::kD / 4, r::kD / 4 + 2}})
                 .bitcast(dtypes::float32)
                 .reshape({1, out, pairs, 2, 1});
  const std::vector<int64_t> halves{1, out, pairs, 2, kSubs / 2};
  auto half = [&](int64_t h) {
    return d.shrink({{0, 1}, {0, out}, {0, pairs}, {h, h + 1}, {0, 1}}).expand(halves);
  };
  Tensor dsel = upper_half(halves, 3, raw.device()).where(half(1), half(0)).reshape(dims);
  Tensor sc = Blocks(raw.reshape({n, r::kBytes}))
                  .bytes(r::kScales, kSubs)
                  .reshape(dims)
                  .bitcast(dtypes::int8)
                  .cast(dtypes::float32);
  Tensor f = dsel * sc * x.scale.reshape({rows, 1, pairs, kSubs});
  return ((dots - offsets).cast(dtypes::float32) * f).reshape({rows, out, pairs * kSubs});
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
    Tensor t = k_terms(xb, level_dots(xb, level.reshape({1, out, nb / 2, kWords})), d, sc, offsets);
    sum = parity ? sum + t : t;
  }
  return sum;
}

}  // namespace

Tensor iq4_xs_x_words(const Int8Rows& x) {
  const int64_t rows = x.q.size(0), pairs = x.q.size(1) / 16;
  if (x.q.size(1) % 16 != 0)
    fail("linear_int8: IQ4_XS reads x in runs of 512 values, x has {} per row",
         x.q.size(1) * kInt8Block);
  // (rows, pair, block m, sub-block j, word s, byte) -> (rows, pair, s, m, j, byte)
  Tensor q = x.q.reshape({rows, pairs, 2, 8, 8, 4}).permute({0, 1, 4, 2, 3, 5});
  return level_words(q).reshape({rows, pairs * kQK_K / 2}).bitcast(dtypes::int32).contiguous();
}

bool int8_activations(GgmlType type) {
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ||
         type == GgmlType::IQ4_XS;
}

bool linear_int8_supports(GgmlType type, int64_t in) {
  if (type == GgmlType::Q4_K || type == GgmlType::Q5_K) return in > 0 && in % kQK_K == 0;
  if (type == GgmlType::Q6_K || type == GgmlType::IQ4_XS) return in > 0 && in % (2 * kQK_K) == 0;
  return false;
}

int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in) {
  const int64_t blocks = out * (in / kQK_K);
  return type == GgmlType::IQ4_XS ? blocks / 2 * static_cast<int64_t>(iq4_xs_reordered::kBytes)
                                  : blocks * static_cast<int64_t>(format_of(type).block_bytes);
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
  constexpr size_t kPair = 2 * iq4_xs::kBytes;
  if (blocks.empty() || blocks.size() % kPair != 0)
    fail("linear_int8: {} bytes are not whole pairs of IQ4_XS blocks of {}", blocks.size(),
         iq4_xs::kBytes);
  const auto n = static_cast<int64_t>(blocks.size() / kPair);
  static HugePageArena arena;
  std::shared_ptr<std::byte> copy =
      arena.allocate(static_cast<size_t>(n) * r::kBytes, "IQ4_XS blocks reordered");
  const auto* src = reinterpret_cast<const uint8_t*>(blocks.data());
  auto* dst = reinterpret_cast<uint8_t*>(copy.get());
  ThreadPool::instance().parallel_for(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint8_t* to = dst + i * r::kBytes;
      uint8_t codes[2][kQK_K];
      for (int64_t m = 0; m < 2; ++m) {
        const uint8_t* block = src + i * kPair + m * iq4_xs::kBytes;
        const float d = load_f16(block + iq4_xs::kD);
        std::memcpy(to + r::kD + 4 * m, &d, sizeof d);
        for (int64_t j = 0; j < 8; ++j)
          to[r::kScales + 8 * m + j] =
              static_cast<uint8_t>(static_cast<int8_t>(iq4_xs_scale(block, j)));
        iq4_xs_codes(block, codes[m]);
      }
      // Code word 16g + l, byte b: lane l is sub-block l % 8 of block l / 8; the low nibble is
      // its element 8g + b (step 2g), the high one 8g + 4 + b (step 2g + 1).
      for (int64_t g = 0; g < 4; ++g)
        for (int64_t l = 0; l < 16; ++l)
          for (int64_t b = 0; b < 4; ++b) {
            const uint8_t* c = codes[l / 8] + 32 * (l % 8) + 8 * g + b;
            to[r::kQs + 64 * g + 4 * l + b] = static_cast<uint8_t>(c[0] | c[4] << 4);
          }
    }
  });
  return copy;
}

}  // namespace ugrad::llm
