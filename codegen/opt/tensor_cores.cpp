#include "codegen/opt/tensor_cores.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "codegen/opt/opt.h"
#include "codegen/ranges.h"

namespace ugrad {

namespace {

// A LOAD of f16/bf16, maybe under a CAST: the load.
std::optional<UOp> half_load(const UOp& u) {
  UOp x = u.op() == Op::CAST ? u.src(0) : u;
  if (x.op() != Op::LOAD) return std::nullopt;
  const Scalar s = x.dtype().scalar;
  if (s != Scalar::Float16 && s != Scalar::BFloat16) return std::nullopt;
  return x;
}

struct Match {
  UOp store, red, k, m, n, la, lb;
};

std::optional<Match> match(const UOp& ast, std::optional<int64_t> axis) {
  if (ast.src().size() != 1) return std::nullopt;
  Match mt;
  mt.store = ast.src(0);
  std::vector<UOp> reds;
  for (const UOp& u : mt.store.toposort())
    if (u.op() == Op::REDUCE) reds.push_back(u);
  if (reds.size() != 1) return std::nullopt;
  mt.red = reds[0];
  if (mt.red.arg_as<Op>() != Op::ADD || mt.red.src().size() != 2) return std::nullopt;
  mt.k = mt.red.src(1);
  if (axis && mt.k.arg_as<RangeArg>().axis != *axis) return std::nullopt;
  const UOp& v = mt.red.src(0);
  if (v.op() != Op::MUL || !mt.k.src(0).is_const() || mt.k.src(0).const_int() % kWmmaTile != 0)
    return std::nullopt;
  auto a = half_load(v.src(0)), b = half_load(v.src(1));
  if (!a || !b || a->dtype() != b->dtype()) return std::nullopt;
  if (!is_float(mt.red.dtype()) || mt.red.dtype().scalar == Scalar::Float64) return std::nullopt;
  mt.la = *a, mt.lb = *b;
  std::vector<UOp> only_a, only_b;
  for (const UOp& r : kernel_ranges(ast)) {
    const AxisType t = r.arg_as<RangeArg>().type;
    if (r == mt.k) continue;
    if (t != AxisType::Loop) return std::nullopt;  // other opts already applied
    const bool da = depends_on(mt.la, r), db = depends_on(mt.lb, r);
    if (da && !db) only_a.push_back(r);
    if (db && !da) only_b.push_back(r);
  }
  if (only_a.size() != 1 || only_b.size() != 1) return std::nullopt;
  mt.m = only_a[0], mt.n = only_b[0];
  for (const UOp& r : {mt.m, mt.n})
    if (!r.src(0).is_const() || r.src(0).const_int() % kWmmaTile != 0) return std::nullopt;
  if (!depends_on(mt.la, mt.k) || !depends_on(mt.lb, mt.k)) return std::nullopt;
  // The rest of the store must not need k.
  return mt;
}

}  // namespace

UOp wmma(const UOp& a, const UOp& b, const UOp& c) {
  if (a.dtype() != b.dtype() || a.dtype().count != kWmmaTile ||
      c.dtype() != dtypes::float32.vec(8) ||
      (a.dtype().scalar != Scalar::Float16 && a.dtype().scalar != Scalar::BFloat16))
    fail("codegen: WMMA takes <16 x f16|bf16> A and B and a <8 x f32> C, got {}, {}, {}",
         to_string(a.dtype()), to_string(b.dtype()), to_string(c.dtype()));
  const std::string shape =
      a.dtype().scalar == Scalar::Float16 ? "WMMA_16x16x16_f16_f32" : "WMMA_16x16x16_bf16_f32";
  return UOp::make(Op::WMMA, c.dtype(), {a, b, c}, shape);
}

std::optional<int64_t> tensor_core_axis(const UOp& ast) {
  auto mt = match(ast, std::nullopt);
  if (!mt) return std::nullopt;
  return mt->k.arg_as<RangeArg>().axis;
}

UOp tensor_cores(const UOp& ast, int64_t axis) {
  auto found = match(ast, axis);
  if (!found)
    fail("codegen: TENSOR_CORE({},0): the kernel is not an eligible f16/bf16 matmul", axis);
  const Match& mt = *found;
  int64_t fresh = kernel_ranges(ast).back().arg_as<RangeArg>().axis + 1;
  const int64_t T = kWmmaTile;
  const UOp tm =
      UOp::range(mt.m.src(0).const_int() / T, mt.m.arg_as<RangeArg>().axis, AxisType::Global);
  const UOp tn =
      UOp::range(mt.n.src(0).const_int() / T, mt.n.arg_as<RangeArg>().axis, AxisType::Global);
  const UOp k0 =
      UOp::range(mt.k.src(0).const_int() / T, mt.k.arg_as<RangeArg>().axis, AxisType::Reduce);
  const UOp lane = UOp::range(kWmmaWave, fresh++, AxisType::Local);
  const UOp row = lane % T, half = lane.idiv(T);
  const DType frag_t = mt.la.dtype().vec(uint16_t(T));
  std::vector<UOp> fa, fb;
  for (int64_t j = 0; j < T; ++j) {
    const UOp kj = k0 * T + j;
    fa.push_back(mt.la.substitute({{mt.m, tm * T + row}, {mt.k, kj}}));
    fb.push_back(mt.lb.substitute({{mt.n, tn * T + row}, {mt.k, kj}}));
  }
  std::vector<UOp> zeros(8, UOp::cnst(dtypes::float32, 0.0));
  const UOp acc0 = UOp::make(Op::VECTORIZE, dtypes::float32.vec(8), zeros);
  const UOp w =
      wmma(UOp::make(Op::VECTORIZE, frag_t, fa), UOp::make(Op::VECTORIZE, frag_t, fb), acc0);
  std::vector<UOp> stores;
  for (int64_t i = 0; i < 8; ++i) {
    UOp part = UOp::make(Op::GEP, dtypes::float32, {w}, std::vector<int64_t>{i});
    UOp acc = UOp::make(Op::REDUCE, dtypes::float32, {part, k0}, Op::ADD);
    UOp s = mt.store.substitute({{mt.red, acc.cast(mt.red.dtype())}});
    stores.push_back(s.substitute({{mt.m, tm * T + half + 2 * i}, {mt.n, tn * T + row}}));
  }
  return ast.replace_src(std::move(stores));
}

UOp fuse_wmma_accumulate(const UOp& lowered) {
  // WMMA with a zero C -> the 8 ADDs that take its elements, by element.
  std::unordered_map<UOp, std::vector<std::pair<UOp, UOp>>> uses;  // wmma -> (add, other)[i]
  for (const UOp& u : lowered.toposort()) {
    if (u.op() != Op::ADD) continue;
    for (int side = 0; side < 2; ++side) {
      const UOp& g = u.src(side);
      if (g.op() != Op::GEP || g.src(0).op() != Op::WMMA) continue;
      const UOp& c = g.src(0).src(2);
      const bool zero_c =
          c.op() == Op::VECTORIZE && std::all_of(c.src().begin(), c.src().end(), [](const UOp& z) {
            return z.is_const() && z.const_value() == 0.0;
          });
      if (!zero_c) continue;
      auto& v = uses[g.src(0)];
      v.resize(8);
      v[size_t(g.arg_as<std::vector<int64_t>>().at(0))] = {u, u.src(1 - side)};
    }
  }
  std::vector<std::pair<UOp, UOp>> repl;
  for (const auto& [w, v] : uses) {
    if (!std::all_of(v.begin(), v.end(), [](const auto& p) { return bool(p.first); })) continue;
    std::vector<UOp> accs;
    for (const auto& p : v) accs.push_back(p.second);
    UOp c = UOp::make(Op::VECTORIZE, dtypes::float32.vec(8), accs);
    UOp fused = wmma(w.src(0), w.src(1), c);
    for (size_t i = 0; i < 8; ++i)
      repl.emplace_back(v[i].first, UOp::make(Op::GEP, dtypes::float32, {fused},
                                              std::vector<int64_t>{int64_t(i)}));
  }
  return repl.empty() ? lowered : lowered.substitute(repl);
}

}  // namespace ugrad
