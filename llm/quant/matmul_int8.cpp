#include "llm/quant/matmul_int8.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "base/error.h"
#include "base/huge_pages.h"
#include "llm/quant/blocks.h"
#include "runtime/thread_pool.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kPair = 64;                      // values per pair of sub-blocks
constexpr int64_t kPairWords = kPair / 8;          // nibble words per pair
constexpr int64_t kPairsPerBlock = kQK_K / kPair;  // pairs per super-block
static_assert(kInt8Block * 2 == kPair, "x's scales: two per pair");

}  // namespace

bool matmul_int8_supports(GgmlType type, int64_t in) {
  return type == GgmlType::Q4_K && in > 0 && in % (kPair * kMatmulInt8Pairs) == 0;
}

PackedInt8Weight pack_matmul_int8(GgmlType type, std::span<const std::byte> blocks, int64_t out,
                                  int64_t in, const std::string& device) {
  const QuantFormat& f = format_of(type);
  if (!matmul_int8_supports(type, in) || out <= 0)
    fail("matmul_int8: {} ({}, {}) has no packed int8 form", f.name, out, in);
  const int64_t nb = in / kQK_K, g_count = in / kPair;
  if (static_cast<int64_t>(blocks.size()) != out * nb * static_cast<int64_t>(q4_k::kBytes))
    fail("matmul_int8: {} ({}, {}) needs {} bytes, got {}", f.name, out, in,
         out * nb * static_cast<int64_t>(q4_k::kBytes), blocks.size());
  // One buffer in huge pages (base/huge_pages.h): words, then scales, then mins, each of 4-byte
  // elements; the packing's threads fault it in.
  static HugePageArena arena;
  const int64_t n_words = out * kPairWords * g_count, n_scales = out * 2 * g_count;
  std::shared_ptr<std::byte> buffer = arena.allocate(
      static_cast<size_t>(n_words + 2 * n_scales) * 4, fmt::format("a packed {} weight", f.name));
  auto* words = reinterpret_cast<uint32_t*>(buffer.get());
  auto* scales = reinterpret_cast<float*>(words + n_words);
  float* mins = scales + n_scales;
  const auto* src = reinterpret_cast<const uint8_t*>(blocks.data());
  ThreadPool::instance().parallel_for(out, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o)
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* block = src + (o * nb + b) * static_cast<int64_t>(q4_k::kBytes);
        const float d = load_f16(block + q4_k::kD), dmin = load_f16(block + q4_k::kDmin);
        for (int64_t j = 0; j < kPairsPerBlock; ++j) {
          const int64_t g = b * kPairsPerBlock + j;
          for (int64_t h = 0; h < 2; ++h) {
            uint8_t sc = 0, m = 0;
            unpack_scale_min_k4(static_cast<int>(2 * j + h), block + q4_k::kScales, &sc, &m);
            const auto at = static_cast<size_t>((o * 2 + h) * g_count + g);
            scales[at] = d * sc;
            mins[at] = dmin * m;
          }
          const uint8_t* qs = block + q4_k::kQs + j * 4 * kPairWords;
          for (int64_t w = 0; w < kPairWords; ++w)
            words[static_cast<size_t>((o * kPairWords + w) * g_count + g)] = load_u32(qs + 4 * w);
        }
      }
  });
  auto part = [&](int64_t first, int64_t count, const std::vector<int64_t>& shape, DType dtype) {
    return Tensor::from_host_memory({buffer.get() + first * 4, static_cast<size_t>(count) * 4},
                                    shape, dtype, device, buffer);
  };
  return {part(0, n_words, {out, kPairWords, g_count}, dtypes::uint32),
          part(n_words, n_scales, {out, 2, g_count}, dtypes::float32),
          part(n_words + n_scales, n_scales, {out, 2, g_count}, dtypes::float32)};
}

Tensor matmul_int8(const Int8Rows& x, const PackedInt8Weight& w) {
  const int64_t rows = x.words.size(0), out = w.words.size(0), g_count = w.words.size(2);
  if (x.words.ndim() != 2 || x.words.size(1) != g_count * 2 * kPairWords)
    fail("matmul_int8: {} inputs, x has {}", g_count * kPair, shape_str(x.words.shape()));
  // x's words, scales and level sums per pair, materialized with the pairs innermost: each lane
  // group's loads are then contiguous.
  auto by_pair = [&](const Tensor& t, int64_t per) {
    return t.reshape({rows, g_count, per})
        .permute({0, 2, 1})
        .contiguous()
        .reshape({rows, 1, per, g_count});
  };
  const Tensor xw = by_pair(x.words, 2 * kPairWords), xs = by_pair(x.scale, 2),
               xsum = by_pair(x.sum32, 2);
  // Word w of a pair holds 4 levels of the low sub-block (its low nibbles) and 4 of the high.
  const Tensor q = w.words.reshape({1, out, kPairWords, g_count});
  const Tensor level[2] = {q & 0x0F0F0F0F, idiv(q, 16) & 0x0F0F0F0F};
  auto at = [&](const Tensor& t, int64_t i) {
    return t.shrink({{0, t.size(0)}, {0, t.size(1)}, {i, i + 1}, {0, g_count}});
  };
  const Tensor scales = w.scales.reshape({1, out, 2, g_count}),
               mins = w.mins.reshape({1, out, 2, g_count});
  Tensor terms;
  for (int64_t h = 0; h < 2; ++h) {
    // The sub-block's 8 products as a sum of DOT4s, not a reduce: one int32 chain per lane
    // (codegen folds each addition into the vpdpbusd that accumulates).
    Tensor acc;
    for (int64_t i = 0; i < kPairWords; ++i) {
      const Tensor p = dot4(at(level[h], i), at(xw, h * kPairWords + i));
      acc = i ? acc + p : p;
    }
    const Tensor t =
        acc.cast(dtypes::float32) * (at(scales, h) * at(xs, h)) - at(mins, h) * at(xsum, h);
    terms = h ? terms + t : t;
  }
  return terms.reshape({rows, out, g_count}).sum({-1});
}

}  // namespace ugrad::llm
