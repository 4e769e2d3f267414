// Constant folding, identities and canonical forms, and the composed pm_symbolic.
#include "uop/symbolic.h"

#include "uop/alu.h"
#include "uop/symbolic_impl.h"

namespace ugrad {

using namespace sym;
using R = std::optional<UOp>;

ConstValue value_of(const UOp& c) {
  return std::visit(
      [](const auto& x) -> ConstValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> ||
                      std::is_same_v<T, double>)
          return x;
        else
          return int64_t{0};
      },
      c.arg());
}

UOp const_from_value(DType dtype, const ConstValue& v) {
  Arg arg = std::visit([](auto x) -> Arg { return x; }, v);
  return UOp::make(Op::CONST, dtype.base(), {}, std::move(arg));
}

namespace {

const std::vector<Op>& alu_ops() {
  static const std::vector<Op> ops = [] {
    std::vector<Op> v;
    for (int i = 0; i < kNumOps; ++i)
      if (is_alu(static_cast<Op>(i))) v.push_back(static_cast<Op>(i));
    return v;
  }();
  return ops;
}

std::vector<Op> commutative_ops() {
  std::vector<Op> v;
  for (Op op : alu_ops())
    if (is_commutative(op)) v.push_back(op);
  return v;
}

bool scalar(DType t) { return t.count == 1 && !t.is_ptr; }

R fold_constants(const UOp& u) {
  if (!scalar(u.dtype())) return std::nullopt;
  DType src = (u.op() == Op::WHERE ? u.src(1) : u.src(0)).dtype();
  if (u.op() == Op::FDIV && !is_float(src)) return std::nullopt;
  if (u.op() == Op::BITCAST && itemsize(src.base()) != itemsize(u.dtype().base()))
    return std::nullopt;
  std::vector<ConstValue> vals;
  for (const UOp& s : u.src()) vals.push_back(value_of(s));
  return const_from_value(u.dtype(), exec_alu(u.op(), u.dtype().base(), vals, src.base(), u.arg()));
}

// An integer or bool node whose interval is one value is that value.
R fold_single_value(const UOp& u) {
  if (!exact_int(u.dtype()) && !(is_bool(u.dtype()) && scalar(u.dtype()))) return std::nullopt;
  int64_t lo = u.vmin();
  if (lo != u.vmax()) return std::nullopt;
  return UOp::cnst_int(u.dtype(), lo);
}

bool int_scalar(DType t) { return scalar(t) && is_int(t); }
bool bool_scalar(DType t) { return scalar(t) && is_bool(t); }
bool scalar_value(DType t) { return scalar(t) && (is_int(t) || is_bool(t)); }

UOp logical_not(const UOp& x) { return x.ne(UOp::cnst_bool(true)); }

}  // namespace

const PatternMatcher& pm_const_fold() {
  static const PatternMatcher pm({
      // op(c0, c1, ...) -> exec_alu(op, c0, c1, ...)
      {UPat::ops(alu_ops(), {}, false).all_src(UPat(Op::CONST)),
       [](const Match& m) { return fold_constants(m.root()); }},
      // vmin(x) == vmax(x) -> that constant
      {UPat::ops(alu_ops(), {}, false), [](const Match& m) { return fold_single_value(m.root()); }},
  });
  return pm;
}

const PatternMatcher& pm_identities() {
  static const PatternMatcher pm = [] {
    // Patterns are built here, not as globals: tables may be first used during static
    // initialization.
    UPat x = UPat::var("x"), y = UPat::var("y"), c = UPat::var("c"), c0 = UPat::cvar("c0");
    UPat ix = UPat::var("x", int_scalar), bx = UPat::var("x", bool_scalar);
    UPat sx = UPat::var("x", scalar_value);
    return PatternMatcher({
        // x + 0 -> x (NOTE: for floats this maps -0.0 + 0.0 to -0.0, as tinygrad does)
        {x + UPat::cnst(0), [](const Match& m) { return m["x"]; }},
        // x * 1 -> x
        {x * UPat::cnst(1), [](const Match& m) { return m["x"]; }},
        // x * 0 -> 0 (ints: no NaN or -0.0)
        {ix * UPat::cnst(0), [](const Match& m) { return m["x"].const_int_like(0); }},
        // x // 1 -> x
        {idiv(ix, UPat::cnst(1)), [](const Match& m) { return m["x"]; }},
        // x % 1 -> 0, x % -1 -> 0
        {ix % UPat::cnst(1), [](const Match& m) { return m["x"].const_int_like(0); }},
        {ix % UPat::cnst(-1), [](const Match& m) { return m["x"].const_int_like(0); }},
        // x ^ x -> 0 (bool: False)
        {UPat::commutative(Op::XOR, {sx, sx}), [](const Match& m) { return m["x"].const_like(0); }},
        // x ^ 0 -> x, x | 0 -> x
        {UPat::commutative(Op::XOR, {x, UPat::cnst(0)}), [](const Match& m) { return m["x"]; }},
        {UPat::commutative(Op::OR, {x, UPat::cnst(0)}), [](const Match& m) { return m["x"]; }},
        // x & 0 -> 0
        {UPat::commutative(Op::AND, {sx, UPat::cnst(0)}),
         [](const Match& m) { return m["x"].const_like(0); }},
        // x & x -> x, x | x -> x, max(x, x) -> x
        {UPat::ops({Op::AND, Op::OR, Op::MAX}, {x, x}), [](const Match& m) { return m["x"]; }},
        // x & True -> x, x | True -> True, x ^ True -> !x (bools)
        {UPat::commutative(Op::AND, {bx, UPat::cnst(1)}), [](const Match& m) { return m["x"]; }},
        {UPat::commutative(Op::OR, {bx, UPat::cnst(1)}),
         [](const Match&) { return UOp::cnst_bool(true); }},
        {UPat::commutative(Op::XOR, {bx, UPat::cnst(1)}),
         [](const Match& m) { return logical_not(m["x"]); }},
        // x != False -> x, x == True -> x, x == False -> !x (bools)
        {UPat::commutative(Op::CMPNE, {bx, UPat::cnst(0)}), [](const Match& m) { return m["x"]; }},
        {UPat::commutative(Op::CMPEQ, {bx, UPat::cnst(1)}), [](const Match& m) { return m["x"]; }},
        {UPat::commutative(Op::CMPEQ, {bx, UPat::cnst(0)}),
         [](const Match& m) { return logical_not(m["x"]); }},
        // !!x -> x
        {ne(ne(bx, UPat::cnst(1)), UPat::cnst(1)), [](const Match& m) { return m["x"]; }},
        // x < x -> False; x != x -> False, x == x -> True (ints and bools: no NaN)
        {lt(sx, sx), [](const Match&) { return UOp::cnst_bool(false); }},
        {UPat::ops({Op::CMPNE, Op::CMPEQ}, {sx, sx}),
         [](const Match& m) { return UOp::cnst_bool(m.root().op() == Op::CMPEQ); }},
        // -(-x) -> x
        {neg(neg(x)), [](const Match& m) { return m["x"]; }},
        // where(c, x, x) -> x
        {where(c, x, x), [](const Match& m) { return m["x"]; }},
        // where(True, x, y) -> x, where(False, x, y) -> y
        {where(c0, x, y),
         [](const Match& m) { return m["c0"].const_value() != 0 ? m["x"] : m["y"]; }},
        // where(c, True, False) -> c, where(c, False, True) -> !c
        {where(c, UPat::cnst(1).with_dtype(bool_scalar), UPat::cnst(0)),
         [](const Match& m) { return m["c"]; }},
        {where(c, UPat::cnst(0).with_dtype(bool_scalar), UPat::cnst(1)),
         [](const Match& m) { return logical_not(m["c"]); }},
        // where(!c, x, y) -> where(c, y, x)
        {where(ne(UPat::var("c", bool_scalar), UPat::cnst(1)), x, y),
         [](const Match& m) { return m["c"].where(m["y"], m["x"]); }},
        // max(x, y) -> x when x >= y over the ranges
        {UPat(Op::MAX, {x, y}).with_dtype(exact_int),
         [](const Match& m) -> R {
           const UOp &a = m["x"], &b = m["y"];
           if (a.vmin() >= b.vmax()) return a;
           if (b.vmin() >= a.vmax()) return b;
           return std::nullopt;
         }},
    });
  }();
  return pm;
}

const PatternMatcher& pm_canonical() {
  static const PatternMatcher pm = [] {
    UPat x = UPat::var("x"), y = UPat::var("y"), c0 = UPat::cvar("c0"), c1 = UPat::cvar("c1");
    UPat ix = UPat::var("x", int_scalar);
    return PatternMatcher({
        // c op x -> x op c (commutative ops: constants on the right)
        {UPat::ops(commutative_ops(), {c0, x}),
         [](const Match& m) -> R {
           if (m["x"].op() == Op::CONST) return std::nullopt;
           return UOp::make(m.root().op(), m.root().dtype(), {m["x"], m["c0"]});
         }},
        // (x op c0) op c1 -> x op (c0 op c1) for associative op in {*, &, |, ^, max}; + is
        // pm_like_terms' job for ints. Floats only for max (others would change rounding).
        {UPat::ops({Op::MUL, Op::AND, Op::OR, Op::XOR, Op::MAX, Op::ADD},
                   {UPat::ops({Op::MUL, Op::AND, Op::OR, Op::XOR, Op::MAX, Op::ADD}, {x, c0})
                        .named("inner"),
                    c1}),
         [](const Match& m) -> R {
           const UOp& u = m.root();
           if (m["inner"].op() != u.op() || (is_float(u.dtype()) && u.op() != Op::MAX))
             return std::nullopt;
           UOp folded = UOp::make(u.op(), u.dtype(), {m["c0"], m["c1"]});
           return UOp::make(u.op(), u.dtype(), {m["x"], *fold_constants(folded)});
         }},
        // (x * c) * y -> (x * y) * c (ints: the constant moves out)
        {UPat::commutative(Op::MUL, {UPat(Op::MUL, {x, c0}), y}).with_dtype(int_scalar),
         [](const Match& m) -> R {
           if (m["y"].op() == Op::CONST) return std::nullopt;
           return (m["x"] * m["y"]) * m["c0"];
         }},
        // x - y -> x + y*-1, -x -> x*-1 (ints)
        {UPat(Op::SUB, {ix, y}), [](const Match& m) { return m["x"] + m["y"] * -1; }},
        {neg(ix), [](const Match& m) { return m["x"] * -1; }},
        // (x + y) * c -> x*c + y*c (ints)
        {UPat(Op::MUL, {UPat(Op::ADD, {x, y}), c0}).with_dtype(int_scalar),
         [](const Match& m) { return m["x"] * m["c0"] + m["y"] * m["c0"]; }},
    });
  }();
  return pm;
}

const PatternMatcher& pm_symbolic() {
  static const PatternMatcher pm = pm_const_fold() + pm_identities() + pm_canonical() +
                                   pm_like_terms() + pm_compare() + pm_divmod();
  return pm;
}

UOp simplify(const UOp& u) { return graph_rewrite(u, pm_symbolic()); }

}  // namespace ugrad
