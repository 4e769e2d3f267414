#include "codegen/opt/gemm_tiling.h"

#include <thread>

#include "codegen/affine.h"
#include "codegen/opt/pack.h"
#include "codegen/ranges.h"

namespace ugrad {

namespace {

// The LOAD under `u` through casts, or an empty UOp.
UOp load_through_casts(UOp u) {
  while (u.op() == Op::CAST) u = u.src(0);
  return u.op() == Op::LOAD ? u : UOp();
}

int64_t first_divisor(int64_t n, std::initializer_list<int64_t> candidates) {
  for (int64_t c : candidates)
    if (n % c == 0) return c;
  return 1;
}

}  // namespace

std::optional<std::vector<Opt>> gemm_tiling_opts(const UOp& ast, const CodegenTarget& target) {
  if (ast.src().size() != 1) return std::nullopt;
  const UOp& store = ast.src(0);
  UOp red;
  for (const UOp& u : store.toposort())
    if (u.op() == Op::REDUCE) {
      if (red) return std::nullopt;  // one reduce only
      red = u;
    }
  if (!red || red.arg_as<Op>() != Op::ADD || red.src().size() != 2 || red.src(0).op() != Op::MUL)
    return std::nullopt;
  const UOp a = load_through_casts(red.src(0).src(0)), b = load_through_casts(red.src(0).src(1));
  if (!a || !b) return std::nullopt;
  // m: an output axis only A depends on; n: one only B depends on, contiguous in B and the output.
  UOp m, n;
  const RangeMap open = open_ranges(store);
  for (const UOp& r : open.at(store)) {
    if (r.arg_as<RangeArg>().type != AxisType::Loop || !r.src(0).is_const()) continue;
    const bool in_a = depends_on(a, r), in_b = depends_on(b, r);
    if (in_a && !in_b) m = r;
    if (in_b && !in_a && affine_coefficient(b.src(0).src(1), r) == 1 &&
        affine_coefficient(store.src(0).src(1), r) == 1)
      n = r;
  }
  if (!m || !n) return std::nullopt;
  // Tile: tm rows (copies) x tn columns (vector lanes, 2 registers wide): tm*2 accumulators.
  const int64_t lanes = target.simd_bytes / int64_t(itemsize(red.dtype().base()));
  const int64_t tn = first_divisor(n.src(0).const_int(), {2 * lanes, lanes, 8, 4});
  const int64_t tm = first_divisor(m.src(0).const_int(), {8, 6, 4, 3, 2});
  if (tn < 4) return std::nullopt;
  const int64_t m_axis = m.arg_as<RangeArg>().axis, n_axis = n.arg_as<RangeArg>().axis;
  std::vector<Opt> opts;
  if (tm > 1) opts.push_back({OptType::Upcast, m_axis, tm});
  opts.push_back({OptType::Upcast, n_axis, tn});
  // Pack B's column panel when its rows are far apart (strided rows alias in the caches); with
  // room, several panels per pass over A (a SPLIT of the column tiles nested inside the rows), so
  // each A tile is read from cache for all of them.
  const int64_t k_extent = red.src(1).src(0).is_const() ? red.src(1).src(0).const_int() : 0;
  const int64_t row_bytes = n.src(0).const_int() * int64_t(itemsize(b.dtype().base()));
  const bool pack =
      !target.is_gpu && k_extent >= 64 && k_extent * tn <= kMaxPackElements && row_bytes >= 1024;
  if (pack) {
    const int64_t tiles = n.src(0).const_int() / tn;
    for (int64_t panels : {4, 2})
      if (tiles % panels == 0 && tiles / panels >= 2 &&
          k_extent * tn * panels <= kMaxPackElements) {
        opts.push_back({OptType::Split, n_axis, panels});
        break;
      }
    opts.push_back({OptType::Pack, m_axis, 1});
  } else {
    // A tile of few rows takes copies of its column vector while the accumulators fit in half the
    // registers: attention's weighted sum of values at decode (2 query rows per key/value head)
    // ran 2 x 32 columns, each accumulator one FMA per key (latency-bound) and each pass over the
    // values reading a quarter of every row.
    const int64_t registers =
        std::max<int64_t>(1, tn * itemsize(red.dtype().base()) / std::max(target.simd_bytes, 1));
    int64_t copies = 1;
    while (tm * registers * copies * 2 <= vector_registers(target) / 2 &&
           n.src(0).const_int() % (tn * copies * 2) == 0)
      copies *= 2;
    if (copies > 1) opts.push_back({OptType::Upcast, n_axis, copies});
  }
  return opts;
}

}  // namespace ugrad
