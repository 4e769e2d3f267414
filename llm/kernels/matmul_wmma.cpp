#include "llm/kernels/matmul_wmma.h"

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/int8_units.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

// Tile sizes from the cost model (bench_linear_amd_modeled, Qwen3-8B layer, Q4_K): with 16 waves
// splitting the units and 1 feature tile per workgroup the kernel is issue-bound at 40% of the
// WMMA peak; 4 waves x 2 tiles 24%, 8 x 2 37%, 16 x 2 37%, 4 x 1 37%, 2 x 1 16% (latency-bound:
// too few waves to hide a round trip per unit).
constexpr int64_t kWaves = 16, kTile = kWmmaTile, kRowTiles = kWmmaRows / kTile;

// A piece's 16 levels as the f16 values scale * level - min: a B fragment (zeros where `valid`
// is false, if given), built in pairs of halves. OR-ing a level byte into the low half of 0x6400
// (1024.0, whose ulp is 1) makes the half 1024 + level: one AND-OR per word makes bytes 0 and 2
// such a pair, a shift and one more bytes 1 and 3; then a packed subtract (exact) and a packed
// fma (one rounding) per pair. Signed levels are flipped to level + 128 first. So the fragment
// holds each 4 elements in the order 0, 2, 1, 3: x's columns are stored in that order too
// (tiled_halves).
UOp dequantized(const UnitPiece& p, bool signed_levels, const UOp& valid) {
  const auto pair = [](const UOp& v) {
    const UOp h = v.cast(dtypes::float16);
    return vectorize({h, h});
  };
  const UOp scale = pair(p.scale), min = p.min ? pair(p.min) : UOp();
  const UOp base = pair(f32(signed_levels ? 1152.0 : 1024.0));
  std::vector<UOp> words;
  for (const UOp& level_word : p.levels) {
    UOp w = level_word.cast(dtypes::uint32);
    if (signed_levels) w = w ^ u32(0x80808080u);
    for (const UOp& bytes : {w, w >> u32(8)}) {
      const UOp magic = (bytes & u32(0x00FF00FFu)) | u32(0x64006400u);
      UOp value = (bitcast(magic, dtypes::float16.vec(2)) - base) * scale;
      if (min) value = value - min;
      UOp packed = bitcast(value, dtypes::uint32);
      if (valid) packed = valid.where(packed, u32(0));
      words.push_back(packed);
    }
  }
  return bitcast(vectorize(words), dtypes::float16.vec(kTile));
}

UOp build(const UnitFormat& f, int64_t out, int64_t in, const std::string& name) {
  const auto [block_elems, block_bytes, row_bytes, units] = unit_row(f, in);
  const int64_t tiles = out / kTile;
  KernelBuilder kb;
  View y = kb.buffer(dtypes::float32, {kWmmaRows, out});
  View w = kb.buffer(dtypes::uint32, {out * row_bytes / 4});
  // tiled_halves(x): [column / 16][column % 16 / 8][row][4 words of 2 halves].
  View x = kb.buffer(dtypes::uint32, {in / kTile, 2, kWmmaRows, 4});
  View table = f.uses_table() ? kb.buffer(dtypes::uint32, {256}) : View();
  const WmmaLane lane{kb.local(kWave)};
  UOp wave = kb.local(kWaves), tile = kb.global(tiles);
  const UOp row = lane.col();
  if (f.uses_table()) table = table_in_lds(kb, table, wave * kWave + lane.lane, kWave * kWaves);
  // The waves of a workgroup split the units of a row between them (wave w: w, w + 16, ...).
  UOp step = kb.reduce_range(ceil_div(units, kWaves));
  // Past the last unit (a ragged shape), a lane reads the last one again: its B fragment is
  // zeroed, and no load needs a gate.
  UOp u = last_at_most(step * kWaves + wave, units - 1);
  UOp u_ok = units % kWaves ? (step * kWaves + wave).lt(units) : UOp();
  UOp b = u.idiv(f.units_per_block), j = u % f.units_per_block;
  // acc[t][i]: element i of row tile t, summed over the pieces.
  std::vector<std::vector<UOp>> acc(kRowTiles, std::vector<UOp>(WmmaLane::kAcc));
  for (const UnitPiece& p :
       f.unit({w, (tile * kTile + row) * row_bytes + b * block_bytes, block_bytes % 4 == 0}, j,
              table)) {
    const UOp bfrag = dequantized(p, f.signed_levels(), u_ok);
    const UOp column_tile = (b * block_elems + p.element).idiv(kTile);
    for (int64_t t = 0; t < kRowTiles; ++t) {
      // x[16t + row, the piece's 16 columns]: two 16-byte loads.
      std::vector<UOp> words;
      for (int64_t h8 = 0; h8 < 2; ++h8)
        for (int64_t wi = 0; wi < 4; ++wi) words.push_back(x(column_tile, h8, t * kTile + row, wi));
      const UOp d =
          wmma(bitcast(vectorize(words), dtypes::float16.vec(kTile)), bfrag, WmmaLane::zero());
      for (int64_t i = 0; i < WmmaLane::kAcc; ++i) {
        const UOp sum = sum_over(gep(d, i), {step});
        acc[t][i] = acc[t][i] ? acc[t][i] + sum : sum;
      }
    }
  }
  // The waves' partial sums meet in LDS; wave w adds up element w (and w + 16, ...) of each tile.
  View partials = kb.lds(dtypes::float32, {kWaves, kRowTiles * WmmaLane::kAcc, kWave});
  std::vector<UOp> stores;
  for (int64_t e = 0; e < kRowTiles * WmmaLane::kAcc; ++e)
    stores.push_back(
        lds_store(partials.at(wave, e, lane.lane), acc[e / WmmaLane::kAcc][e % WmmaLane::kAcc]));
  View all = barrier(partials, stores);
  for (int64_t e0 = 0; e0 < kRowTiles * WmmaLane::kAcc; e0 += kWaves) {
    const UOp e = wave + e0;  // this wave's element: row tile e / 8, element e % 8
    const UOp total = sum(generate(kWaves, [&](int64_t v) { return all(v, e, lane.lane); }));
    const UOp m = e.idiv(WmmaLane::kAcc) * kTile + (e % WmmaLane::kAcc) * 2 + lane.half();
    kb.store(y.at(m, tile * kTile + row), total);
  }
  return kb.build(name);
}

}  // namespace

std::optional<KernelNeeds> matmul_wmma_needs(GgmlType type, int64_t out, int64_t in) {
  if (out < 1 || out % kTile != 0 || !reads_as_units(type, in)) return std::nullopt;
  const int64_t table = unit_format(type)->uses_table() ? 256 * 4 : 0;
  return KernelNeeds{.wmma = true,
                     .lds_bytes = kWaves * kRowTiles * WmmaLane::kAcc * kWave * 4 + table};
}

UOp matmul_wmma_kernel(GgmlType type, int64_t out, int64_t in) {
  if (!matmul_wmma_needs(type, out, in))
    fail("matmul_wmma: no WMMA kernel for a {} weight of ({}, {})", format_of(type).name, out, in);
  const std::string name =
      fmt::format("matmul_wmma_{}_{}x{}x{}", format_of(type).name, kWmmaRows, out, in);
  return cached_kernel(name, [&] { return build(*unit_format(type), out, in, name); });
}

namespace {

// x (32, in) as f16 in the kernel's layout: words of 2 halves, [column / 16][column % 16 / 8]
// [row][4 words] (columns reordered as dequantized() orders the weights), so that the 16 lanes
// loading an A fragment's half read 256 consecutive bytes. Lazy: custom_kernel materializes it, in
// one kernel.
Tensor tiled_halves(const Tensor& xh, int64_t in) {
  // Each 4 columns in the order 0, 2, 1, 3, as the B fragments hold the weights (dequantized).
  const Tensor ordered = xh.reshape({kWmmaRows, in / 4, 2, 2}).permute({0, 1, 3, 2});
  Tensor h = ordered.reshape({kWmmaRows, in})
                 .bitcast(dtypes::uint16)
                 .cast(dtypes::uint32)
                 .reshape({kWmmaRows, in / 2, 2});
  Tensor words = h.shrink({{0, kWmmaRows}, {0, in / 2}, {0, 1}}) +
                 h.shrink({{0, kWmmaRows}, {0, in / 2}, {1, 2}}) * 65536;
  return words.reshape({kWmmaRows, in / kTile, 2, 4}).permute({1, 2, 0, 3});
}

}  // namespace

Tensor matmul_wmma(const Tensor& x, const Tensor& words, GgmlType type, int64_t out, int64_t in) {
  const int64_t rows = x.size(0);
  if (x.ndim() != 2 || rows < 1 || rows > kWmmaRows || x.size(1) != in)
    fail("matmul_wmma: x must be (1 to {}, {}), got {}", kWmmaRows, in, shape_str(x.shape()));
  UOp ast = matmul_wmma_kernel(type, out, in);
  Tensor xh = x.cast(dtypes::float16);
  if (rows < kWmmaRows) xh = xh.pad({{0, kWmmaRows - rows}, {0, 0}});
  std::vector<Tensor> buffers{Tensor::empty({kWmmaRows, out}, dtypes::float32, words.device()),
                              words, tiled_halves(xh, in).reshape({kWmmaRows * in / 2})};
  if (unit_format(type)->uses_table()) buffers.push_back(unit_table(type, words.device()));
  Tensor y = custom_kernel(ast, buffers)[0];
  return rows < kWmmaRows ? y.shrink({{0, rows}, {0, out}}) : y;
}

}  // namespace ugrad::llm
