#include "codegen/opt/dot4.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "codegen/opt/opt.h"
#include "uop/upat.h"

namespace ugrad {

namespace {

bool is_byte_int(DType t) { return t.scalar == Scalar::Int8 || t.scalar == Scalar::UInt8; }

// CAST(LOAD of int8/uint8): the load.
std::optional<UOp> byte_load(const UOp& u) {
  if (u.op() != Op::CAST || u.src(0).op() != Op::LOAD || !is_byte_int(u.src(0).dtype()))
    return std::nullopt;
  return u.src(0);
}

struct Dot {
  UOp a, b;  // loads, signed operand first
  std::string fn;
};

// An eligible REDUCE: ADD over exactly `k` of CAST(LOAD i8) * CAST(LOAD i8) in int32/uint32.
std::optional<Dot> match(const UOp& red, const UOp& k) {
  if (red.op() != Op::REDUCE || red.arg_as<Op>() != Op::ADD || red.src().size() != 2 ||
      !(red.src(1) == k))
    return std::nullopt;
  const DType t = red.dtype();
  if (t.scalar != Scalar::Int32 && t.scalar != Scalar::UInt32) return std::nullopt;
  if (!k.src(0).is_const() || k.src(0).const_int() % kDot4Width != 0) return std::nullopt;
  const UOp& v = red.src(0);
  if (v.op() != Op::MUL) return std::nullopt;
  auto a = byte_load(v.src(0)), b = byte_load(v.src(1));
  if (!a || !b) return std::nullopt;
  const bool sa = a->dtype().scalar == Scalar::Int8, sb = b->dtype().scalar == Scalar::Int8;
  if (!sa && sb) std::swap(a, b);
  return Dot{*a, *b, sa && sb ? "sdot4" : sa || sb ? "sudot4" : "udot4"};
}

std::vector<UOp> reduces_over(const UOp& ast, const UOp& k) {
  std::vector<UOp> out;
  for (const UOp& u : ast.toposort())
    if (match(u, k)) out.push_back(u);
  return out;
}

}  // namespace

UOp dot4(const std::string& fn, const UOp& a, const UOp& b, const UOp& acc) {
  if (fn != "sdot4" && fn != "udot4" && fn != "sudot4")
    fail("codegen: dot4 is sdot4, udot4 or sudot4, got '{}'", fn);
  if (a.dtype().count != kDot4Width || b.dtype().count != kDot4Width || !is_byte_int(a.dtype()) ||
      !is_byte_int(b.dtype()) || (acc.dtype() != dtypes::int32 && acc.dtype() != dtypes::uint32))
    fail("codegen: {} takes two <4 x i8> and an i32 accumulator, got {}, {}, {}", fn,
         to_string(a.dtype()), to_string(b.dtype()), to_string(acc.dtype()));
  return UOp::make(Op::CUSTOM, acc.dtype(), {a, b, acc}, fn);
}

std::optional<int64_t> dot4_axis(const UOp& ast) {
  for (const UOp& r : kernel_ranges(ast))
    if (r.arg_as<RangeArg>().type == AxisType::Reduce && !reduces_over(ast, r).empty())
      return r.arg_as<RangeArg>().axis;
  return std::nullopt;
}

UOp dot4_reduce(const UOp& ast, int64_t axis) {
  const std::vector<UOp> ranges = kernel_ranges(ast);
  auto it = std::find_if(ranges.begin(), ranges.end(),
                         [&](const UOp& r) { return r.arg_as<RangeArg>().axis == axis; });
  const std::vector<UOp> reds = it == ranges.end() ? std::vector<UOp>{} : reduces_over(ast, *it);
  if (reds.empty())
    fail("codegen: DOT4({},4): no int8 multiply-accumulate over axis {}", axis, axis);
  const UOp k = *it;
  const UOp k4 = UOp::range(k.src(0).const_int() / kDot4Width, axis, AxisType::Reduce);
  std::vector<std::pair<UOp, UOp>> repl;
  for (const UOp& red : reds) {
    const Dot d = *match(red, k);
    std::vector<UOp> va, vb;
    for (int64_t j = 0; j < kDot4Width; ++j) {
      va.push_back(d.a.substitute({{k, k4 * kDot4Width + j}}));
      vb.push_back(d.b.substitute({{k, k4 * kDot4Width + j}}));
    }
    const UOp a = UOp::make(Op::VECTORIZE, d.a.dtype().vec(kDot4Width), va);
    const UOp b = UOp::make(Op::VECTORIZE, d.b.dtype().vec(kDot4Width), vb);
    const UOp part = dot4(d.fn, a, b, UOp::cnst_int(red.dtype(), 0));
    repl.emplace_back(red, UOp::make(Op::REDUCE, red.dtype(), {part, k4}, Op::ADD));
  }
  return ast.substitute(repl);
}

const PatternMatcher& pm_fuse_dot4() {
  static const PatternMatcher pm({
      // acc + dot4(a, b, 0) -> dot4(a, b, acc): v_dot4 accumulates in place
      {UPat::commutative(
           Op::ADD,
           {UPat::var("acc"),
            UPat(Op::CUSTOM, {UPat::var("a"), UPat::var("b"), UPat::cnst(0)}).named("dot")}),
       [](const Match& m) -> std::optional<UOp> {
         return m["dot"].replace_src({m["a"], m["b"], m["acc"]});
       }},
  });
  return pm;
}

}  // namespace ugrad
