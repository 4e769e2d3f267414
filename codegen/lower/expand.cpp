#include "codegen/lower/expand.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/affine.h"
#include "codegen/opt/opt.h"
#include "codegen/ranges.h"
#include "uop/symbolic.h"

namespace ugrad {

namespace {

// Copies of `u` with `r` replaced by 0..n-1.
std::vector<UOp> copies(const UOp& u, const UOp& r) {
  std::vector<UOp> out;
  const int64_t n = r.src(0).const_int();
  for (int64_t i = 0; i < n; ++i)
    out.push_back(u.substitute({{r, UOp::cnst_int(dtypes::index, i)}}));
  return out;
}

// REDUCE(x, ..., u, ...) -> REDUCE(x[u=0] op x[u=1] op ..., ...) for the unroll range u.
UOp expand_unroll(const UOp& ast, const UOp& r) {
  std::unordered_map<UOp, UOp> repl;
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::REDUCE) continue;
    auto& src = u.src();
    if (std::find(src.begin() + 1, src.end(), r) == src.end()) continue;
    const Op op = u.arg_as<Op>();
    std::vector<UOp> parts = copies(src[0], r);
    // Pairwise tree: shorter dependency chains than a left fold.
    while (parts.size() > 1) {
      std::vector<UOp> next;
      for (size_t i = 0; i + 1 < parts.size(); i += 2)
        next.push_back(parts[i].alu(op, parts[i + 1]));
      if (parts.size() % 2) next.push_back(parts.back());
      parts = std::move(next);
    }
    std::vector<UOp> nsrc{parts[0]};
    for (size_t i = 1; i < src.size(); ++i)
      if (!(src[i] == r)) nsrc.push_back(src[i]);
    repl.emplace(u, u.replace_src(std::move(nsrc)));
  }
  std::vector<std::pair<UOp, UOp>> mapping(repl.begin(), repl.end());
  return ast.substitute(mapping);
}

// A store that depends on the upcast range u becomes one store per value of u.
UOp expand_upcast(const UOp& ast, const UOp& r) {
  std::vector<UOp> stores;
  for (const UOp& s : ast.src()) {
    if (!depends_on(s, r)) {
      stores.push_back(s);
      continue;
    }
    for (UOp& c : copies(s, r)) stores.push_back(std::move(c));
  }
  return ast.replace_src(std::move(stores));
}

// A vector axis: a power-of-two upcast along which every store that depends on it is contiguous.
bool power_of_two_lanes(const UOp& r) {
  const int64_t n = r.src(0).const_int();
  return n >= 2 && n <= kMaxVectorLanes && (n & (n - 1)) == 0;
}

bool vectorizable(const UOp& ast, const UOp& r) {
  if (!power_of_two_lanes(r)) return false;
  for (const UOp& s : ast.src())
    if (depends_on(s, r) && affine_coefficient(s.src(0).src(1), r) != 1) return false;
  return true;
}

// A reduce lane axis: a power-of-two unroll of a reduce of 32/64-bit numbers along which every
// load that depends on it reads contiguous elements (under a gate per lane, a masked load).
bool reduce_vectorizable(const UOp& ast, const UOp& r) {
  if (!power_of_two_lanes(r)) return false;
  for (const UOp& u : ast.toposort()) {
    if (u.op() == Op::REDUCE && std::find(u.src().begin() + 1, u.src().end(), r) != u.src().end() &&
        (is_bool(u.dtype()) || u.dtype().count != 1 || itemsize(u.dtype()) < 4))
      return false;
    if (u.op() != Op::LOAD || !depends_on(u, r)) continue;
    const UOp& idx = u.src(0);
    if (affine_coefficient(idx.src(1), r) != 1) return false;
  }
  return true;
}

// Some REDUCE over `r` also reduces over one of `lanes`.
bool shares_reduce(const UOp& ast, const UOp& r, const std::vector<UOp>& lanes) {
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::REDUCE) continue;
    auto has = [&](const UOp& x) {
      return std::find(u.src().begin() + 1, u.src().end(), x) != u.src().end();
    };
    if (has(r) && std::any_of(lanes.begin(), lanes.end(), has)) return true;
  }
  return false;
}

}  // namespace

UOp expand_ranges(const UOp& ast, bool vectorize) {
  UOp out = ast;
  std::vector<UOp> unrolls;
  for (const UOp& r : kernel_ranges(ast))
    if (r.arg_as<RangeArg>().type == AxisType::Unroll) unrolls.push_back(r);
  // An unroll along which the loads are contiguous stays as the lanes of a vector accumulator
  // (a lane axis; at most one per reduce, all of one width). Deciding needs the index math
  // simplified over the split ranges, with the other unrolls expanded first: their constants
  // decide which index math folds.
  std::vector<UOp> lanes;
  for (size_t i = 0; vectorize && i < unrolls.size(); ++i) {
    const UOp& r = unrolls[i];
    if (!power_of_two_lanes(r) ||
        (!lanes.empty() && r.src(0).const_int() != lanes[0].src(0).const_int()))
      continue;
    UOp trial = ast;
    for (const UOp& x : unrolls)
      if (!(x == r) && std::find(lanes.begin(), lanes.end(), x) == lanes.end())
        trial = expand_unroll(trial, x);
    trial = graph_rewrite(trial, pm_simplify_valid());
    if (!reduce_vectorizable(trial, r) || shares_reduce(trial, r, lanes)) continue;
    lanes.push_back(r);
    out = trial;
  }
  if (lanes.empty())
    for (const UOp& r : unrolls) out = expand_unroll(out, r);
  if (!lanes.empty()) {  // lanes are the vector axis: every upcast becomes copies
    for (const UOp& r : kernel_ranges(out))
      if (r.arg_as<RangeArg>().type == AxisType::Upcast) out = expand_upcast(out, r);
    return out;
  }
  std::vector<UOp> upcasts;
  for (const UOp& r : kernel_ranges(out))
    if (r.arg_as<RangeArg>().type == AxisType::Upcast) upcasts.push_back(r);
  // The innermost vectorizable upcast stays (vector lanes); the others become copies.
  UOp vector_axis;
  if (vectorize)
    for (auto it = upcasts.rbegin(); it != upcasts.rend() && !vector_axis; ++it)
      if (vectorizable(out, *it)) vector_axis = *it;
  for (const UOp& r : upcasts)
    if (!(r == vector_axis)) out = expand_upcast(out, r);
  return out;
}

}  // namespace ugrad
