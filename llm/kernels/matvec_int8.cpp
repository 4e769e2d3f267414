#include "llm/kernels/matvec_int8.h"

#include <algorithm>

#include "base/error.h"
#include "llm/kernels/int8_units.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kLanes = 32, kWaves = 4;

UOp index(int64_t v) { return UOp::cnst_int(dtypes::index, v); }

// sum_k dot4(a[k], b[k]) over 4 words, in int32.
UOp dot16(const std::array<UOp, 4>& a, const std::array<UOp, 4>& b, Dot4Arg signs) {
  UOp acc = UOp::cnst_int(dtypes::int32, 0);
  for (int k = 0; k < 4; ++k) acc = KernelBuilder::dot4(a[k], b[k], acc, signs);
  return acc;
}

// `experts` 0: every row times the one weight, the rows sharing each weight load. Else the
// weight is `experts` matrices and row r takes matrix ids[r]: one wave per (row, output).
UOp build(const UnitFormat& f, int64_t rows, int64_t out, int64_t in, int64_t experts,
          const std::string& name) {
  const auto [block_elems, block_bytes, row_bytes, units] = unit_row(f, in);
  const int64_t steps = ceil_div(units, kLanes);
  const int64_t outputs = experts ? rows * out : out, shared_rows = experts ? 1 : rows;
  KernelBuilder kb;
  UOp y = kb.buffer(dtypes::float32, rows * out);
  UOp w = kb.buffer(dtypes::uint32, ceil_div(std::max<int64_t>(experts, 1) * out * row_bytes, 4));
  UOp xw = kb.buffer(dtypes::int32, rows * in / 4);
  UOp xs = kb.buffer(dtypes::float32, rows * in / kInt8Block);
  UOp ids = experts ? kb.buffer(dtypes::int32, rows) : UOp();
  UOp table = f.uses_table ? kb.buffer(dtypes::uint32, 256) : UOp();
  UOp lane = kb.local(kLanes), wave = kb.local(kWaves);
  UOp group = kb.global(ceil_div(outputs, kWaves));
  // Past the last output or unit (a ragged shape), a lane reads the last one again and adds
  // nothing: ungated loads stay vector loads.
  UOp n_ok = (group * kWaves + wave).lt(outputs);
  UOp o = last_at_most(group * kWaves + wave, outputs - 1);
  UOp n = experts ? o % out : o, first_row = experts ? o.idiv(out) : index(0);
  UOp matrix_row = experts ? kb.load(ids, first_row).cast(dtypes::index) * out + n : n;
  if (f.uses_table) table = table_in_lds(kb, table, wave * kLanes + lane, kLanes * kWaves);
  UOp step = kb.reduce_range(steps);
  UOp u = last_at_most(step * kLanes + lane, units - 1);
  UOp valid = n_ok.alu(Op::AND, (step * kLanes + lane).lt(units));
  UOp b = u.idiv(f.units_per_block), j = u % f.units_per_block;
  BlockBytes bytes{&kb, w, matrix_row * row_bytes + b * block_bytes, block_bytes % 4 == 0};
  const Unit unit = f.unit(bytes, j, table);
  const Dot4Arg signs{f.signed_levels, true};
  const std::array<UOp, 4> ones{
      UOp::cnst_int(dtypes::int32, 0x01010101), UOp::cnst_int(dtypes::int32, 0x01010101),
      UOp::cnst_int(dtypes::int32, 0x01010101), UOp::cnst_int(dtypes::int32, 0x01010101)};
  const UOp zero = UOp::cnst(dtypes::float32, 0.0);
  UOp partials = kb.lds(dtypes::float32, shared_rows * kWaves * kLanes);
  std::vector<UOp> stores;
  for (int64_t r = 0; r < shared_rows; ++r) {
    UOp sum;
    for (const UnitPiece& h : unit) {
      // The piece's first element of x.
      const UOp at = b * block_elems + h.element + (first_row + r) * in;
      std::array<UOp, 4> x;
      for (int k = 0; k < 4; ++k) x[k] = kb.load(xw, at.idiv(4) + k);
      UOp s = h.scale * dot16(h.levels, x, signs).cast(dtypes::float32);
      if (h.min) s = s - h.min * dot16(ones, x, {false, true}).cast(dtypes::float32);
      s = s * kb.load(xs, at.idiv(kInt8Block));  // a piece lies in one block of x
      sum = sum ? sum + s : s;
    }
    const UOp acc = KernelBuilder::reduce(valid.where(sum, zero), Op::ADD, {step});
    stores.push_back(KernelBuilder::lds_store(partials, (wave + r * kWaves) * kLanes + lane, acc));
  }
  // Every lane sums its wave's 32 partials (broadcast LDS reads); lane 0 writes.
  UOp all = KernelBuilder::barrier(partials, stores);
  for (int64_t r = 0; r < shared_rows; ++r) {
    UOp k = kb.reduce_range(kLanes);
    UOp total = KernelBuilder::reduce(kb.load(all, (wave + r * kWaves) * kLanes + k), Op::ADD, {k});
    kb.store(y, n + (first_row + r) * out, total, lane.eq(index(0)).alu(Op::AND, n_ok));
  }
  return kb.build(name);
}

}  // namespace

bool matvec_int8_supports(GgmlType type, int64_t out, int64_t in) {
  return out > 0 && reads_as_units(type, in);
}

UOp matvec_int8_kernel(GgmlType type, int64_t rows, int64_t out, int64_t in, int64_t experts) {
  if (!matvec_int8_supports(type, out, in))
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
  if (unit_format(type)->uses_table) buffers.push_back(unit_table(type, words.device()));
  return custom_kernel(ast, buffers)[0];
}

}  // namespace ugrad::llm
