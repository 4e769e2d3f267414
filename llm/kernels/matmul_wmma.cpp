#include "llm/kernels/matmul_wmma.h"

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/int8_units.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kLanes = 32, kWaves = 4, kTile = 16, kRowTiles = kWmmaRows / kTile;
// Feature tiles per wave: each A fragment (x) serves this many B fragments.
constexpr int64_t kFeatureTiles = 2;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A piece's 16 levels as the f16 values scale * level - min: a B fragment.
UOp dequantized(const UnitPiece& p, bool signed_levels) {
  std::vector<UOp> v;
  for (const UOp& word : p.levels)
    for (int i = 0; i < 4; ++i) {
      UOp byte = word.alu(Op::SHR, word.const_int_like(8 * i)).alu(Op::AND, word.const_int_like(255));
      UOp level = signed_levels ? byte.cast(dtypes::uint8).cast(dtypes::int8).cast(dtypes::float32)
                                : byte.cast(dtypes::float32);
      UOp value = p.scale * level;
      if (p.min) value = value - p.min;
      v.push_back(value.cast(dtypes::float16));
    }
  return KernelBuilder::vectorize(v);
}

UOp build(const UnitFormat& f, int64_t out, int64_t in, const std::string& name) {
  const QuantFormat& q = format_of(f.type);
  const int64_t block_elems = q.block_size, row_bytes = in / block_elems * q.block_bytes;
  const int64_t units = in / block_elems * f.units_per_block, tiles = out / kTile;
  KernelBuilder kb;
  UOp y = kb.buffer(dtypes::float32, kWmmaRows * out);
  UOp w = kb.buffer(dtypes::uint32, out * row_bytes / 4);
  UOp x = kb.buffer(dtypes::float16, kWmmaRows * in);
  UOp table = f.uses_table ? kb.buffer(dtypes::uint32, 256) : UOp();
  UOp lane = kb.local(kLanes), wave = kb.local(kWaves);
  UOp group = kb.global(ceil_div(tiles, kFeatureTiles * kWaves));
  UOp row = lane % kTile, half = lane.idiv(kTile);
  if (f.uses_table) table = table_in_lds(kb, table, wave * kLanes + lane, kLanes * kWaves);
  UOp step = kb.reduce_range(units);
  UOp b = step.idiv(f.units_per_block), j = step % f.units_per_block;
  const UOp zero = KernelBuilder::vectorize(std::vector<UOp>(8, UOp::cnst(dtypes::float32, 0.0)));
  for (int64_t ft = 0; ft < kFeatureTiles; ++ft) {
    const UOp tile = (group * kWaves + wave) * kFeatureTiles + ft;
    const UOp tile_ok = tiles % (kFeatureTiles * kWaves) ? tile.lt(tiles) : UOp::cnst_bool(true);
    const UOp feature = tile * kTile + row;
    BlockBytes bytes{&kb, w, feature * row_bytes + b * q.block_bytes, tile_ok,
                     q.block_bytes % 4 == 0};
    const Unit unit = f.unit(bytes, j, table);
    // acc[t][i]: row tile t's 8 accumulators, one set per piece (each WMMA accumulates in place).
    std::vector<std::vector<UOp>> acc(kRowTiles, std::vector<UOp>(8));
    for (const UnitPiece& p : unit) {
      const UOp bfrag = dequantized(p, f.signed_levels);
      for (int64_t t = 0; t < kRowTiles; ++t) {
        std::vector<UOp> a;  // x[16t + row, the piece's 16 columns]: the same for every tile
        for (int64_t e = 0; e < kTile; ++e)
          a.push_back(kb.load(x, (t * kTile + row) * in + b * block_elems + p.element + e));
        const UOp d = KernelBuilder::wmma(KernelBuilder::vectorize(a), bfrag, zero);
        for (int64_t i = 0; i < 8; ++i) {
          UOp sum = KernelBuilder::reduce(KernelBuilder::gep(d, i), Op::ADD, {step});
          acc[t][i] = acc[t][i] ? acc[t][i] + sum : sum;
        }
      }
    }
    for (int64_t t = 0; t < kRowTiles; ++t)
      for (int64_t i = 0; i < 8; ++i)
        kb.store(y, (t * kTile + 2 * i + half) * out + feature, acc[t][i],
                 tiles % (kFeatureTiles * kWaves) ? tile_ok : UOp());
  }
  return kb.build(name);
}

}  // namespace

bool matmul_wmma_supports(GgmlType type, int64_t out, int64_t in) {
  return out > 0 && out % kTile == 0 && reads_as_units(type, in);
}

UOp matmul_wmma_kernel(GgmlType type, int64_t out, int64_t in) {
  if (!matmul_wmma_supports(type, out, in))
    fail("matmul_wmma: no WMMA kernel for a {} weight of ({}, {})", format_of(type).name, out,
         in);
  const std::string name = fmt::format("matmul_wmma_{}_{}x{}x{}", format_of(type).name,
                                       kWmmaRows, out, in);
  return cached_kernel(name, [&] { return build(*unit_format(type), out, in, name); });
}

Tensor matmul_wmma(const Tensor& x, const Tensor& words, GgmlType type, int64_t out,
                   int64_t in) {
  const int64_t rows = x.size(0);
  if (x.ndim() != 2 || rows < 1 || rows > kWmmaRows || x.size(1) != in)
    fail("matmul_wmma: x must be (1 to {}, {}), got {}", kWmmaRows, in, shape_str(x.shape()));
  UOp ast = matmul_wmma_kernel(type, out, in);
  Tensor xh = x.cast(dtypes::float16);
  if (rows < kWmmaRows) xh = xh.pad({{0, kWmmaRows - rows}, {0, 0}});
  std::vector<Tensor> buffers{Tensor::empty({kWmmaRows, out}, dtypes::float32, words.device()),
                              words, xh.contiguous()};
  if (unit_format(type)->uses_table) buffers.push_back(unit_table(type, words.device()));
  Tensor y = custom_kernel(ast, buffers)[0];
  return rows < kWmmaRows ? y.shrink({{0, rows}, {0, out}}) : y;
}

}  // namespace ugrad::llm
