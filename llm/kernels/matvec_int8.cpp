#include "llm/kernels/matvec_int8.h"

#include <algorithm>

#include "base/error.h"
#include "llm/kernels/int8_units.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kWaves = 4;

// sum_k dot4(a[k], b[k]) over 4 words, in int32.
UOp dot16(const std::array<UOp, 4>& a, const std::array<UOp, 4>& b, Dot4Arg signs) {
  UOp acc = i32(0);
  for (int k = 0; k < 4; ++k) acc = dot4(a[k], b[k], acc, signs);
  return acc;
}

// `experts` 0: every row times the one weight, the rows sharing each weight load. Else the
// weight is `experts` matrices and row r takes matrix ids[r]: one wave per (row, output).
UOp build(const UnitFormat& f, int64_t rows, int64_t out, int64_t in, int64_t experts,
          const std::string& name) {
  const auto [block_elems, block_bytes, row_bytes, units] = unit_row(f, in);
  const int64_t outputs = experts ? rows * out : out, shared_rows = experts ? 1 : rows;
  KernelBuilder kb;
  View y = kb.buffer(dtypes::float32, {rows, out});
  View w =
      kb.buffer(dtypes::uint32, {ceil_div(std::max<int64_t>(experts, 1) * out * row_bytes, 4)});
  View xw = kb.buffer(dtypes::int32, {rows * in / 4});             // x's levels, 4 a word
  View xs = kb.buffer(dtypes::float32, {rows * in / kInt8Block});  // a scale per 32
  View ids = experts ? kb.buffer(dtypes::int32, {rows}) : View();
  View table = f.uses_table() ? kb.buffer(dtypes::uint32, {256}) : View();
  UOp lane = kb.local(kWave), wave = kb.local(kWaves);
  UOp group = kb.global(ceil_div(outputs, kWaves));
  // Past the last output or unit (a ragged shape), a lane reads the last one again and adds
  // nothing: ungated loads stay vector loads.
  UOp n_ok = (group * kWaves + wave).lt(outputs);
  UOp o = last_at_most(group * kWaves + wave, outputs - 1);
  UOp n = experts ? o % out : o, first_row = experts ? o.idiv(out) : idx(0);
  UOp matrix_row = experts ? ids(first_row).cast(dtypes::index) * out + n : n;
  if (f.uses_table()) table = table_in_lds(kb, table, wave * kWave + lane, kWave * kWaves);
  UOp step = kb.reduce_range(ceil_div(units, kWave));
  UOp u = last_at_most(step * kWave + lane, units - 1);
  UOp valid = n_ok & (step * kWave + lane).lt(units);
  UOp b = u.idiv(f.units_per_block), j = u % f.units_per_block;
  const Unit unit =
      f.unit({w, matrix_row * row_bytes + b * block_bytes, block_bytes % 4 == 0}, j, table);
  const Dot4Arg signs{f.signed_levels(), true};
  const std::array<UOp, 4> ones{i32(0x01010101), i32(0x01010101), i32(0x01010101), i32(0x01010101)};
  View partials = kb.lds(dtypes::float32, {shared_rows, kWaves, kWave});
  std::vector<UOp> stores;
  for (int64_t r = 0; r < shared_rows; ++r) {
    std::vector<UOp> shares;
    for (const UnitPiece& h : unit) {
      // The piece's first element of x, counted over all rows.
      const UOp at = b * block_elems + h.element + (first_row + r) * in;
      const std::array<UOp, 4> x{xw(at.idiv(4)), xw(at.idiv(4) + 1), xw(at.idiv(4) + 2),
                                 xw(at.idiv(4) + 3)};
      UOp s = h.scale * dot16(h.levels, x, signs).cast(dtypes::float32);
      if (h.min) s = s - h.min * dot16(ones, x, {false, true}).cast(dtypes::float32);
      shares.push_back(s * xs(at.idiv(kInt8Block)));  // a piece lies in one block of x
    }
    const UOp acc = sum_over(valid.where(sum(shares), f32(0.0)), {step});
    stores.push_back(lds_store(partials.at(r, wave, lane), acc));
  }
  // Every lane sums its wave's 32 partials (broadcast LDS reads); lane 0 writes.
  View all = barrier(partials, stores);
  for (int64_t r = 0; r < shared_rows; ++r) {
    UOp k = kb.reduce_range(kWave);
    kb.store(y.at(first_row + r, n), sum_over(all(r, wave, k), {k}), lane.eq(idx(0)) & n_ok);
  }
  return kb.build(name);
}

}  // namespace

std::optional<KernelNeeds> matvec_int8_needs(GgmlType type, int64_t out, int64_t in) {
  if (out < 1 || !reads_as_units(type, in)) return std::nullopt;
  const int64_t table = unit_format(type)->uses_table() ? 256 * 4 : 0;
  return KernelNeeds{.int8_dot = true, .lds_bytes = kMatvecMaxRows * kWaves * kWave * 4 + table};
}

UOp matvec_int8_kernel(GgmlType type, int64_t rows, int64_t out, int64_t in, int64_t experts) {
  if (!matvec_int8_needs(type, out, in))
    fail("matvec_int8: no int8 kernel for a {} weight of ({}, {})", format_of(type).name, out, in);
  const int64_t most = experts ? kMatvecMaxExpertRows : kMatvecMaxRows;
  if (rows < 1 || rows > most) fail("matvec_int8: {} rows (1 to {})", rows, most);
  if (experts < 0) fail("matvec_int8: {} experts", experts);
  const std::string name =
      experts ? fmt::format("matvec_int8_{}_{}x{}x{}_of_{}", format_of(type).name, rows, out, in,
                            experts)
              : fmt::format("matvec_int8_{}_{}x{}x{}", format_of(type).name, rows, out, in);
  return cached_kernel(name,
                       [&] { return build(*unit_format(type), rows, out, in, experts, name); });
}

Tensor matvec_int8(const Int8Rows& x, const Tensor& words, GgmlType type, int64_t out, int64_t in,
                   const Tensor& ids, int64_t experts) {
  const int64_t rows = x.words.size(0);
  UOp ast = matvec_int8_kernel(type, rows, out, in, ids.defined() ? experts : 0);
  std::vector<Tensor> buffers{Tensor::empty({rows, out}, dtypes::float32, words.device()), words,
                              x.words, x.scale};
  if (ids.defined()) buffers.push_back(ids.reshape({rows}).cast(dtypes::int32));
  if (unit_format(type)->uses_table()) buffers.push_back(unit_table(type, words.device()));
  return custom_kernel(ast, buffers)[0];
}

}  // namespace ugrad::llm
