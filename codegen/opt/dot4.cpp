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
  UOp a, b;  // the byte loads
  Dot4Arg signs;
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
  return Dot{*a,
             *b,
             {.a_signed = a->dtype().scalar == Scalar::Int8,
              .b_signed = b->dtype().scalar == Scalar::Int8}};
}

std::vector<UOp> reduces_over(const UOp& ast, const UOp& k) {
  std::vector<UOp> out;
  for (const UOp& u : ast.toposort())
    if (match(u, k)) out.push_back(u);
  return out;
}

}  // namespace

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
    // the 4 bytes k = 4*k4 + j of a load as one word
    auto word = [&](const UOp& load) {
      std::vector<UOp> bytes;
      for (int64_t j = 0; j < kDot4Width; ++j)
        bytes.push_back(load.substitute({{k, k4 * kDot4Width + j}}));
      const UOp vec = UOp::make(Op::VECTORIZE, load.dtype().vec(kDot4Width), bytes);
      return UOp::make(Op::BITCAST, red.dtype(), {vec});
    };
    const UOp part = UOp::make(Op::DOT4, red.dtype(),
                               {word(d.a), word(d.b), UOp::cnst_int(red.dtype(), 0)}, d.signs);
    repl.emplace_back(red, UOp::make(Op::REDUCE, red.dtype(), {part, k4}, Op::ADD));
  }
  return ast.substitute(repl);
}

const PatternMatcher& pm_fuse_dot4() {
  static const PatternMatcher pm({
      // acc + DOT4(a, b, 0) -> DOT4(a, b, acc): v_dot4 accumulates in place
      {UPat::commutative(
           Op::ADD, {UPat::var("acc"),
                     UPat(Op::DOT4, {UPat::var("a"), UPat::var("b"), UPat::cnst(0)}).named("dot")}),
       [](const Match& m) -> std::optional<UOp> {
         return m["dot"].replace_src({m["a"], m["b"], m["acc"]});
       }},
  });
  return pm;
}

}  // namespace ugrad
