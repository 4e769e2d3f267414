#include "codegen/expand.h"

#include <algorithm>
#include <unordered_map>

#include "codegen/affine.h"
#include "codegen/opt.h"

namespace ugrad {

namespace {

bool depends_on(const UOp& u, const UOp& r) {
  for (const UOp& x : u.toposort())
    if (x == r) return true;
  return false;
}

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
bool vectorizable(const UOp& ast, const UOp& r) {
  const int64_t n = r.src(0).const_int();
  if (n < 2 || n > kMaxVectorLanes || (n & (n - 1)) != 0) return false;
  for (const UOp& s : ast.src())
    if (depends_on(s, r) && affine_coefficient(s.src(0).src(1), r) != 1) return false;
  return true;
}

}  // namespace

UOp expand_ranges(const UOp& ast, bool vectorize) {
  UOp out = ast;
  for (const UOp& r : kernel_ranges(ast))
    if (r.arg_as<RangeArg>().type == AxisType::Unroll) out = expand_unroll(out, r);
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
