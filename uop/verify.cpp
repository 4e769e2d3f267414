#include "uop/verify.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/env.h"
#include "base/error.h"

namespace ugrad {
namespace {

using R = std::optional<UOp>;

// The stage being verified, for the error message (set by verify()).
thread_local std::string_view current_stage;

std::string describe(const UOp& u) {
  std::string srcs;
  for (const UOp& s : u.src())
    srcs += fmt::format("{}{} {}", srcs.empty() ? "" : ", ", op_name(s.op()), to_string(s.dtype()));
  std::string arg = arg_to_string(u.arg());
  return fmt::format("{} {} ({}){}{}", op_name(u.op()), to_string(u.dtype()), srcs,
                     arg.empty() ? "" : " ", arg);
}

// Throws when `ok` is false: the rule `rule` is broken at `u`.
void require(bool ok, const UOp& u, std::string_view rule) {
  if (ok) return;
  internal_error("verify{}{}: {} breaks the rule '{}'\n  node: {}",
                 current_stage.empty() ? "" : " ", current_stage, op_name(u.op()), rule,
                 describe(u));
}

bool is_scalar_like(DType t) { return !t.is_ptr && t.scalar != Scalar::Void; }
// Operand dtypes agree when equal, or when one is a weak literal type of the same kind.
bool agree(DType a, DType b) {
  if (a == b) return true;
  if (a.count != b.count || a.is_ptr || b.is_ptr) return false;
  if (is_weak(a)) std::swap(a, b);
  if (!is_weak(b)) return false;
  return b.scalar == Scalar::WeakFloat ? is_float(a) : is_int(a) || is_float(a);
}
bool is_bool_dt(DType t) { return !t.is_ptr && is_bool(t); }
bool is_int_dt(DType t) { return !t.is_ptr && is_int(t); }

std::vector<Op> ops_where(bool (*pred)(Op)) {
  std::vector<Op> v;
  for (int i = 0; i < kNumOps; ++i)
    if (pred(static_cast<Op>(i))) v.push_back(static_cast<Op>(i));
  return v;
}

bool arithmetic_binary(Op op) { return is_binary(op) && !is_comparison(op); }
bool math_unary(Op op) { return is_unary(op) && op != Op::CAST && op != Op::BITCAST; }

R check_binary(const Match& m) {
  const UOp& u = m.root();
  require(agree(u.src(0).dtype(), u.src(1).dtype()), u, "ALU sources have the same dtype");
  require(agree(u.dtype(), u.src(0).dtype()) && agree(u.dtype(), u.src(1).dtype()), u,
          "an ALU result has its sources' dtype");
  DType t = u.dtype();
  switch (u.op()) {
    case Op::IDIV:
    case Op::MOD:
      require(is_int_dt(t), u, "IDIV and MOD take integers");
      break;
    case Op::FDIV:
      require(is_float(t) && !t.is_ptr, u, "FDIV takes floats");
      break;
    case Op::AND:
    case Op::OR:
    case Op::XOR:
    case Op::SHL:
    case Op::SHR:
      require(is_int_dt(t) || is_bool_dt(t), u, "bitwise ops take integers or bools");
      break;
    default:
      require(is_scalar_like(t), u, "an ALU result is a value, not a pointer or void");
  }
  return std::nullopt;
}

R check_comparison(const Match& m) {
  const UOp& u = m.root();
  require(agree(u.src(0).dtype(), u.src(1).dtype()), u, "compared sources have the same dtype");
  require(is_bool_dt(u.dtype()) && u.dtype().count == u.src(0).dtype().count, u,
          "a comparison gives bool (one per lane)");
  return std::nullopt;
}

R check_unary(const Match& m) {
  const UOp& u = m.root();
  require(u.dtype() == u.src(0).dtype(), u, "a unary ALU result has its source's dtype");
  if (u.op() == Op::BYTE_LUT) {
    const Scalar w = u.dtype().scalar;
    require((w == Scalar::Int32 || w == Scalar::UInt32) && !u.dtype().is_ptr, u,
            "BYTE_LUT takes int32 or uint32 words of 4 bytes");
    const auto* table = std::get_if<std::vector<int64_t>>(&u.arg());
    require(
        table && table->size() == 16 &&
            std::all_of(table->begin(), table->end(), [](int64_t v) { return v >= 0 && v < 256; }),
        u, "BYTE_LUT's arg is a table of 16 bytes");
  } else if (u.op() != Op::NEG && u.op() != Op::TRUNC)
    require(is_float(u.dtype()) && !u.dtype().is_ptr, u, "transcendental ops take floats");
  else
    require(is_scalar_like(u.dtype()), u, "an ALU result is a value, not a pointer or void");
  return std::nullopt;
}

R check_ternary(const Match& m) {
  const UOp& u = m.root();
  if (u.op() == Op::WHERE) {
    require(is_bool_dt(u.src(0).dtype()), u, "the WHERE condition is bool");
    require(agree(u.src(1).dtype(), u.src(2).dtype()) && agree(u.dtype(), u.src(1).dtype()), u,
            "WHERE branches and result have one dtype");
    return std::nullopt;
  }
  for (const UOp& s : u.src())
    require(agree(u.dtype(), s.dtype()), u, "MULACC and DOT4 sources and result have one dtype");
  if (u.op() == Op::DOT4) {
    const Scalar w = u.dtype().scalar;
    require((w == Scalar::Int32 || w == Scalar::UInt32) && !u.dtype().is_ptr, u,
            "DOT4 takes int32 or uint32 words of 4 bytes");
    require(std::holds_alternative<Dot4Arg>(u.arg()), u, "DOT4's arg is a Dot4Arg");
  }
  return std::nullopt;
}

R check_cast(const Match& m) {
  const UOp& u = m.root();
  require(is_scalar_like(u.dtype()) && is_scalar_like(u.src(0).dtype()), u,
          "CAST converts values, not pointers or void");
  if (u.op() == Op::BITCAST)
    require(itemsize(u.dtype()) == itemsize(u.src(0).dtype()), u, "BITCAST keeps the size");
  return std::nullopt;
}

R check_const(const Match& m) {
  const UOp& u = m.root();
  const Arg& a = u.arg();
  DType t = u.dtype();
  require(!t.is_ptr && t.scalar != Scalar::Void, u, "a CONST has a value dtype");
  if (is_bool(t))
    require(std::holds_alternative<bool>(a), u, "a bool CONST holds a bool");
  else if (is_float(t))
    require(std::holds_alternative<double>(a), u, "a float CONST holds a double");
  else
    require(std::holds_alternative<int64_t>(a), u, "an integer CONST holds an int64");
  return std::nullopt;
}

R check_param(const Match& m) {
  const UOp& u = m.root();
  const auto* p = std::get_if<ParamArg>(&u.arg());
  require(p != nullptr, u, "PARAM's arg is a ParamArg");
  if (p->slot < 0) {
    require(is_int_dt(u.dtype()), u, "a variable is an integer");
    require(p->lo <= p->hi && !p->name.empty(), u, "a variable has a name and lo <= hi");
  }
  return std::nullopt;
}

R check_range(const Match& m) {
  const UOp& u = m.root();
  require(u.dtype() == dtypes::index, u, "RANGE is index-typed");
  require(u.src(0).dtype() == dtypes::index, u, "a RANGE end is index-typed");
  require(std::holds_alternative<RangeArg>(u.arg()), u, "RANGE's arg is a RangeArg");
  return std::nullopt;
}

R check_special(const Match& m) {
  const UOp& u = m.root();
  require(is_int_dt(u.dtype()) && is_int_dt(u.src(0).dtype()), u,
          "SPECIAL and its extent are ints");
  require(std::holds_alternative<std::string>(u.arg()), u, "SPECIAL's arg is its name");
  return std::nullopt;
}

R check_index(const Match& m) {
  const UOp& u = m.root();
  require(u.src().size() >= 2, u, "INDEX takes a pointer and at least one index");
  require(u.src(0).dtype().is_ptr, u, "INDEX's first source is a pointer");
  size_t n = u.src().size();
  bool gated = n >= 3 && is_bool_dt(u.src(n - 1).dtype());
  for (size_t i = 1; i < n - (gated ? 1 : 0); ++i)
    require(is_int_dt(u.src(i).dtype()), u, "INDEX indices are integers");
  return std::nullopt;
}

R check_load(const Match& m) {
  const UOp& u = m.root();
  require(!u.src().empty() && u.src().size() <= 3, u, "LOAD takes a pointer (, alt, gate)");
  require(u.src(0).dtype().is_ptr, u, "LOAD reads through a pointer");
  require(!u.dtype().is_ptr && u.dtype().scalar == u.src(0).dtype().scalar, u,
          "LOAD gives the pointee's dtype");
  if (u.src().size() == 3) {
    require(agree(u.src(1).dtype(), u.dtype()), u, "a gated LOAD's alt value has its dtype");
    require(is_bool_dt(u.src(2).dtype()), u, "a LOAD gate is bool");
  }
  return std::nullopt;
}

R check_store(const Match& m) {
  const UOp& u = m.root();
  require(u.src().size() == 2 || u.src().size() == 3, u, "STORE takes a pointer, a value (, gate)");
  require(u.src(0).dtype().is_ptr, u, "STORE writes through a pointer");
  require(u.src(1).dtype().scalar == u.src(0).dtype().scalar && !u.src(1).dtype().is_ptr, u,
          "a STORE value has the pointee's dtype");
  if (u.src().size() == 3) require(is_bool_dt(u.src(2).dtype()), u, "a STORE gate is bool");
  require(u.dtype() == dtypes::void_, u, "STORE is void");
  return std::nullopt;
}

R check_closes_ranges(const Match& m) {
  const UOp& u = m.root();
  require(!u.src().empty(), u, "END and REDUCE take a value first");
  for (size_t i = 1; i < u.src().size(); ++i)
    require(u.src(i).op() == Op::RANGE, u, "END and REDUCE close RANGEs (sources after the first)");
  if (u.op() == Op::REDUCE) {
    const Op* op = std::get_if<Op>(&u.arg());
    require(op && (*op == Op::ADD || *op == Op::MUL || *op == Op::MAX), u,
            "REDUCE's arg is ADD, MUL or MAX");
    require(u.dtype() == u.src(0).dtype(), u, "REDUCE has its value's dtype");
  }
  return std::nullopt;
}

R check_vectorize(const Match& m) {
  const UOp& u = m.root();
  require(u.dtype().count == u.src().size() && !u.src().empty(), u,
          "VECTORIZE gives one lane per source");
  for (const UOp& s : u.src())
    require(s.dtype() == u.dtype().base() || agree(s.dtype(), u.dtype().base()), u,
            "VECTORIZE sources are scalars of the vector's type");
  return std::nullopt;
}

R check_if(const Match& m) {
  const UOp& u = m.root();
  require(!u.src().empty() && is_bool_dt(u.src(0).dtype()), u, "IF's condition is bool");
  return std::nullopt;
}

R check_sink(const Match& m) {
  require(m.root().dtype() == dtypes::void_, m.root(), "SINK is void");
  return std::nullopt;
}

}  // namespace

const PatternMatcher& pm_verify() {
  static const PatternMatcher pm({
      {UPat::ops(ops_where(arithmetic_binary), {}, false), check_binary},
      {UPat::ops(ops_where(is_comparison), {}, false), check_comparison},
      {UPat::ops(ops_where(math_unary), {}, false), check_unary},
      {UPat::ops(ops_where(is_ternary), {}, false), check_ternary},
      {UPat::ops({Op::CAST, Op::BITCAST}, {}, false), check_cast},
      {UPat(Op::CONST), check_const},
      {UPat(Op::PARAM), check_param},
      {UPat(Op::RANGE), check_range},
      {UPat(Op::SPECIAL), check_special},
      {UPat(Op::INDEX), check_index},
      {UPat(Op::LOAD), check_load},
      {UPat(Op::STORE), check_store},
      {UPat::ops({Op::END, Op::REDUCE}, {}, false), check_closes_ranges},
      {UPat(Op::VECTORIZE), check_vectorize},
      {UPat(Op::IF), check_if},
      {UPat(Op::SINK), check_sink},
  });
  return pm;
}

void verify(const UOp& root, std::string_view stage) {
  std::string_view saved = current_stage;
  current_stage = stage;
  try {
    for (const UOp& u : root.toposort()) pm_verify().rewrite(u);
  } catch (...) {
    current_stage = saved;
    throw;
  }
  current_stage = saved;
}

void verify_if_enabled(const UOp& root, std::string_view stage) {
#ifdef NDEBUG
  if (knob_int(Knob::VERIFY) < 1) return;
#endif
  verify(root, stage);
}

}  // namespace ugrad
