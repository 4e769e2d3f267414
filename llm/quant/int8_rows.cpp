#include "llm/quant/int8_rows.h"

#include "base/error.h"

namespace ugrad::llm {
Int8Levels int8_levels(const Tensor& x) {
  if (x.ndim() != 2 || x.size(1) % kInt8Block != 0)
    fail("int8 activations: need (rows, in) with in a multiple of {}, got {}", kInt8Block,
         shape_str(x.shape()));
  const int64_t rows = x.size(0), nb = x.size(1) / kInt8Block;
  Tensor xb = x.reshape({rows, nb, kInt8Block});
  // Materialized (measured: lazy, a small model's CPU prefill ran ~30% slower).
  Tensor amax = xb.abs().max({-1}, true).contiguous();
  Tensor v = xb * amax.gt(0).where(127.0 / amax, 0.0);
  Tensor q = (v + v.lt(0).where(-0.5, 0.5)).trunc().cast(dtypes::int32);
  return {q, amax / 127.0};
}

Tensor level_words(const Tensor& q) {
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (int64_t d : q.dims()) bounds.emplace_back(0, d);
  Tensor words;
  for (int64_t i = 0; i < 4; ++i) {
    bounds.back() = {i, i + 1};
    Tensor b = (q.shrink(bounds).bitcast(dtypes::uint32) & 255) * (int64_t{1} << (8 * i));
    words = i ? words + b : b;
  }
  return words;
}

Int8Rows quantize_rows_int8(const Tensor& x) {
  const int64_t rows = x.size(0), k4 = x.size(1) / 4, nb = x.size(1) / kInt8Block;
  Int8Levels l = int8_levels(x);
  Tensor q = l.q.reshape({rows, k4, 4});
  // The words and their level sums are sums of the 4 slices, not reduces: one elementwise kernel.
  Tensor words = level_words(q), sum;
  for (int64_t i = 0; i < 4; ++i) {
    Tensor level = q.shrink({{0, rows}, {0, k4}, {i, i + 1}});
    sum = i ? sum + level : level;
  }
  // The scale stays a lazy expression of the materialized max: consumers compute it inline. The
  // sums are materialized where a consumer reads them (a sum of 16 or 32 read lazily, as two
  // loads of the finer sums, cost the DOT4 matvec its vector lanes).
  static_assert(kInt8Block == 32, "sum32 sums one block");
  Tensor scale = l.scale.reshape({rows, nb});
  auto sums = [&](int64_t per) {
    return (sum.reshape({rows, nb, kInt8Block / per, per / 4}).sum({-1}).cast(dtypes::float32) *
            l.scale.reshape({rows, nb, 1}))
        .reshape({rows, nb * kInt8Block / per})
        .contiguous();
  };
  // Each scale twice, one per 16 values: a plain load for the 16-value DOT4 layouts (VNNI only).
  Tensor scale16 =
      l.scale.reshape({rows, nb, 1}).expand({rows, nb, 2}).reshape({rows, 2 * nb}).contiguous();
  return {
      words.reshape({rows, k4}).bitcast(dtypes::int32), scale, sums(32), sums(16), scale16, l.q};
}

Tensor round_rows_int8(const Tensor& x) {
  Int8Levels l = int8_levels(x);
  return (l.q.cast(dtypes::float32) * l.scale).reshape({x.size(0), x.size(1)});
}

}  // namespace ugrad::llm
