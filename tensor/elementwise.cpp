// Elementwise ops. Primitive ones are one ALU node; the rest are composed from them as tinygrad
// does (exp via exp2, log via log2, cos via sin, sigmoid and tanh via exp2, min via max).
#include <cmath>
#include <numbers>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

constexpr double kLog2E = std::numbers::log2e;  // exp(x) = exp2(x * log2(e))
constexpr double kLn2 = std::numbers::ln2;      // log(x) = log2(x) * ln(2)

void need_not_bool(const Tensor& t, std::string_view op) {
  if (is_bool(t.dtype())) fail("{}: not defined for bool tensors", op);
}
void need_int(DType t, std::string_view op) {
  if (!is_int(t) && !is_bool(t)) fail("{}: needs int or bool tensors, got {}", op, to_string(t));
}

// The operands brought to one shape and dtype, then one node.
Tensor binop(Op op, const Tensor& a, const Tensor& b, std::string_view name) {
  auto [x, y] = broadcast_pair(a, b, name);
  return alu(op, is_comparison(op) ? dtypes::bool_ : x.dtype(), {x, y});
}

// A unary op computed in float: ints and bools are cast to float32 first.
Tensor as_float(const Tensor& t) { return t.cast(float_dtype(t.dtype())); }
Tensor unary(Op op, const Tensor& t) { return alu(op, t.dtype(), {t}); }

// The order-reversing map of a dtype: -x for floats, ~x for ints, !x for bool
// (so min(x) = inverse(max(inverse(x))) without integer overflow).
Tensor inverse(const Tensor& t) {
  if (is_float(t.dtype())) return unary(Op::NEG, t);
  return t.bitwise_not();
}

// Both operands as tensors: a Number adopts the other side's dtype where it can.
std::pair<Tensor, Tensor> operands(const Tensor& a, Number b) { return {a, number_operand(b, a)}; }
std::pair<Tensor, Tensor> operands(Number a, const Tensor& b) { return {number_operand(a, b), b}; }

Tensor floor_of(const Tensor& x) {  // floor(x) = trunc(x) - (trunc(x) > x)
  Tensor t = unary(Op::TRUNC, x);
  return t.gt(x).where(t - 1, t);
}

}  // namespace

// ---- unary ----

Tensor Tensor::neg() const {
  need_not_bool(*this, "neg");
  return unary(Op::NEG, *this);
}
Tensor Tensor::exp2() const { return unary(Op::EXP2, as_float(*this)); }
Tensor Tensor::exp() const { return (as_float(*this) * kLog2E).exp2(); }
Tensor Tensor::log2() const { return unary(Op::LOG2, as_float(*this)); }
Tensor Tensor::log() const { return log2() * kLn2; }
Tensor Tensor::sqrt() const { return unary(Op::SQRT, as_float(*this)); }
Tensor Tensor::reciprocal() const { return unary(Op::RECIP, as_float(*this)); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::sin() const { return unary(Op::SIN, as_float(*this)); }
Tensor Tensor::cos() const { return (std::numbers::pi / 2 - as_float(*this)).sin(); }
Tensor Tensor::sigmoid() const {  // 1 / (1 + exp2(-x log2(e)))
  return (1.0 + (as_float(*this) * -kLog2E).exp2()).reciprocal();
}
Tensor Tensor::tanh() const { return 2.0 * (2.0 * as_float(*this)).sigmoid() - 1.0; }
Tensor Tensor::silu() const { return as_float(*this) * sigmoid(); }
Tensor Tensor::gelu() const {
  constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
  constexpr double kGeluCubic = 0.044715;
  Tensor x = as_float(*this);
  return 0.5 * x * (1.0 + (kSqrt2OverPi * (x + kGeluCubic * x * x * x)).tanh());
}
Tensor Tensor::relu() const {
  need_not_bool(*this, "relu");
  return gt(0).where(*this, 0);
}
Tensor Tensor::abs() const {
  if (is_unsigned(dtype()) || is_bool(dtype())) return *this;
  return lt(0).where(neg(), *this);
}
Tensor Tensor::square() const { return *this * *this; }
Tensor Tensor::trunc() const { return is_float(dtype()) ? unary(Op::TRUNC, *this) : *this; }
Tensor Tensor::sign() const {
  need_not_bool(*this, "sign");
  return gt(0).where(1, lt(0).where(-1, 0)).cast(dtype());
}
Tensor Tensor::logical_not() const { return cast(dtypes::bool_).ne(true); }
Tensor Tensor::bitwise_not() const {
  need_int(dtype(), "bitwise_not");
  if (is_bool(dtype())) return logical_not();
  // all ones: an int64 -1 wraps to the width (a double -1 would saturate to 0 for unsigned)
  return alu(Op::XOR, dtype(), {*this, const_tensor(int64_t{-1}, dtype(), shape(), device())});
}
Tensor Tensor::clip(Number lo, Number hi) const { return minimum(maximum(*this, lo), hi); }

Tensor Tensor::cast(DType t) const {
  if (t == dtype()) return *this;
  if (t.count != 1 || t.is_ptr || is_weak(t) || t == dtypes::void_ || t == dtypes::index)
    fail("cast: {} is not a tensor element dtype", ugrad::to_string(t));
  return Tensor(UOp::make(Op::CAST, t, {node()}), device());
}

Tensor Tensor::bitcast(DType t) const {
  if (t.count != 1 || t.is_ptr || is_weak(t) || t == dtypes::void_ || t == dtypes::index)
    fail("bitcast: {} is not a tensor element dtype", ugrad::to_string(t));
  if (itemsize(t) != itemsize(dtype()))
    fail("bitcast: {} ({} bytes) to {} ({} bytes): sizes differ", ugrad::to_string(dtype()),
         itemsize(dtype()), ugrad::to_string(t), itemsize(t));
  if (t == dtype()) return *this;
  return Tensor(UOp::make(Op::BITCAST, t, {node()}), device());
}

// ---- pow ----

Tensor Tensor::pow(const Tensor& e) const { return ugrad::pow(*this, e); }

Tensor Tensor::pow(Number e) const {
  bool int_exponent = !std::holds_alternative<double>(e.value) ||
                      std::get<double>(e.value) == std::trunc(std::get<double>(e.value));
  double ev = const_as_double(e.value);
  // Small integer exponents multiply out exactly (as tinygrad does for constants).
  if (int_exponent && std::fabs(ev) <= 64) {
    if (!is_float(dtype()) && ev < 0) fail("pow: negative exponent {} of an int tensor", ev);
    need_not_bool(*this, "pow");
    auto n = static_cast<int64_t>(std::fabs(ev));
    Tensor base = ev < 0 ? reciprocal() : *this;
    Tensor result = const_like(base, 1);
    for (; n; n >>= 1, base = base * base)
      if (n & 1) result = result * base;
    return result;
  }
  if (ev == 0.5) return sqrt();
  return ugrad::pow(*this, number_operand(e, *this));
}

Tensor pow(const Tensor& a, const Tensor& b) {
  need_not_bool(a, "pow");
  auto [x, e] = broadcast_pair(a, b, "pow");
  DType out = x.dtype();
  x = as_float(x);
  e = as_float(e);
  // |x|^e = exp2(e log2|x|); a negative base gives (-1)^e for integer e and nan otherwise.
  Tensor mag = (e * x.abs().log2()).exp2();
  Tensor is_int = unary(Op::TRUNC, e).eq(e);
  Tensor is_odd = is_int & (unary(Op::TRUNC, e * 0.5) * 2.0).ne(e);
  Tensor signed_mag = is_int.where(is_odd.where(mag.neg(), mag), NAN);
  Tensor r = e.eq(0).where(1.0, x.lt(0).where(signed_mag, mag));
  return r.cast(out);
}
Tensor pow(const Tensor& a, Number b) { return a.pow(b); }
Tensor pow(Number a, const Tensor& b) {
  auto [x, y] = operands(a, b);
  return pow(x, y);
}

// ---- comparisons and where ----

Tensor Tensor::lt(const Tensor& b) const { return binop(Op::CMPLT, *this, b, "<"); }
Tensor Tensor::gt(const Tensor& b) const { return binop(Op::CMPLT, b, *this, ">"); }
Tensor Tensor::eq(const Tensor& b) const { return binop(Op::CMPEQ, *this, b, "=="); }
Tensor Tensor::ne(const Tensor& b) const { return binop(Op::CMPNE, *this, b, "!="); }
// a <= b as (a < b) | (a == b): false when either is NaN, as IEEE and numpy say.
Tensor Tensor::le(const Tensor& b) const { return lt(b) | eq(b); }
Tensor Tensor::ge(const Tensor& b) const { return gt(b) | eq(b); }
Tensor Tensor::lt(Number b) const { return lt(number_operand(b, *this)); }
Tensor Tensor::le(Number b) const { return le(number_operand(b, *this)); }
Tensor Tensor::gt(Number b) const { return gt(number_operand(b, *this)); }
Tensor Tensor::ge(Number b) const { return ge(number_operand(b, *this)); }
Tensor Tensor::eq(Number b) const { return eq(number_operand(b, *this)); }
Tensor Tensor::ne(Number b) const { return ne(number_operand(b, *this)); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Shape s = broadcast_shape(broadcast_shape(cond.shape(), a.shape(), "where"), b.shape(), "where");
  if (cond.device() != a.device() || a.device() != b.device())
    fail("where: operands on different devices {}, {} and {}", cond.device(), a.device(),
         b.device());
  DType t = promote(a.dtype(), b.dtype());
  return alu(Op::WHERE, t,
             {broadcast_to(cond.cast(dtypes::bool_), s, "where"),
              broadcast_to(a.cast(t), s, "where"), broadcast_to(b.cast(t), s, "where")});
}
Tensor where(const Tensor& cond, const Tensor& a, Number b) {
  return where(cond, a, number_operand(b, a));
}
Tensor where(const Tensor& cond, Number a, const Tensor& b) {
  return where(cond, number_operand(a, b), b);
}
Tensor Tensor::where(const Tensor& a, const Tensor& b) const { return ugrad::where(*this, a, b); }
Tensor Tensor::where(const Tensor& a, Number b) const {
  return ugrad::where(*this, a, number_operand(b, a));
}
Tensor Tensor::where(Number a, const Tensor& b) const {
  return ugrad::where(*this, number_operand(a, b), b);
}
Tensor Tensor::where(Number a, Number b) const {
  DType t = promote(a.dtype, b.dtype);
  return ugrad::where(*this, const_tensor(a.value, t, {}, device()),
                      const_tensor(b.value, t, {}, device()));
}

// ---- binary arithmetic ----

Tensor operator-(const Tensor& a) { return a.neg(); }

Tensor operator+(const Tensor& a, const Tensor& b) { return binop(Op::ADD, a, b, "+"); }
Tensor operator*(const Tensor& a, const Tensor& b) { return binop(Op::MUL, a, b, "*"); }
Tensor operator-(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcast_pair(a, b, "-");
  need_not_bool(x, "-");
  return x + y.neg();
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcast_pair(a, b, "/");
  return as_float(x) * as_float(y).reciprocal();
}
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }

#define UGRAD_INT_BINOP(fn, OP, name)           \
  Tensor fn(const Tensor& a, const Tensor& b) { \
    auto [x, y] = broadcast_pair(a, b, name);   \
    need_int(x.dtype(), name);                  \
    return alu(Op::OP, x.dtype(), {x, y});      \
  }
UGRAD_INT_BINOP(operator&, AND, "&")
UGRAD_INT_BINOP(operator|, OR, "|")
UGRAD_INT_BINOP(operator^, XOR, "^")
UGRAD_INT_BINOP(idiv, IDIV, "idiv")
UGRAD_INT_BINOP(mod, MOD, "mod")
#undef UGRAD_INT_BINOP

Tensor dot4(const Tensor& a, const Tensor& b) {
  for (const Tensor* t : {&a, &b})
    if (t->dtype() != dtypes::int32 && t->dtype() != dtypes::uint32)
      fail("dot4: takes int32 or uint32 words of 4 bytes, got {}", to_string(t->dtype()));
  auto [x, y] = broadcast_pair(a.bitcast(dtypes::int32), b.bitcast(dtypes::int32), "dot4");
  // DOT4(x, y, 0) with uint8 x int8 bytes: the form x86 VNNI (vpdpbusd) has
  UOp n = UOp::make(Op::DOT4, dtypes::int32, {x.node(), y.node(), const_like(x, 0).node()},
                    Dot4Arg{.a_signed = false, .b_signed = true});
  shape_of(n);
  return Tensor(n, x.device());
}

Tensor byte_lut(const Tensor& w, std::span<const uint8_t, 16> table) {
  if (w.dtype() != dtypes::int32 && w.dtype() != dtypes::uint32)
    fail("byte_lut: takes int32 or uint32 words of 4 bytes, got {}", to_string(w.dtype()));
  UOp n = UOp::make(Op::BYTE_LUT, w.dtype(), {w.node()},
                    std::vector<int64_t>(table.begin(), table.end()));
  shape_of(n);
  return Tensor(n, w.device());
}

Tensor maximum(const Tensor& a, const Tensor& b) { return binop(Op::MAX, a, b, "maximum"); }
Tensor minimum(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcast_pair(a, b, "minimum");
  return inverse(maximum(inverse(x), inverse(y)));
}

Tensor floordiv(const Tensor& a, const Tensor& b) {
  auto [x, y] = broadcast_pair(a, b, "floordiv");
  if (is_float(x.dtype())) return floor_of(x / y);
  Tensor q = idiv(x, y);
  if (is_unsigned(x.dtype()) || is_bool(x.dtype())) return q;
  // C division truncates; step down when the remainder is non-zero and the signs differ.
  Tensor r = mod(x, y);
  Tensor adjust = r.ne(0) & r.lt(0).ne(y.lt(0));
  return adjust.where(q - 1, q);
}

// Tensor-Number forms: the number becomes a CONST of the promoted dtype.
#define UGRAD_NUMBER_FORMS(fn)           \
  Tensor fn(const Tensor& a, Number b) { \
    auto [x, y] = operands(a, b);        \
    return fn(x, y);                     \
  }                                      \
  Tensor fn(Number a, const Tensor& b) { \
    auto [x, y] = operands(a, b);        \
    return fn(x, y);                     \
  }
UGRAD_NUMBER_FORMS(operator+)
UGRAD_NUMBER_FORMS(operator-)
UGRAD_NUMBER_FORMS(operator*)
UGRAD_NUMBER_FORMS(operator/)
UGRAD_NUMBER_FORMS(operator<)
UGRAD_NUMBER_FORMS(operator<=)
UGRAD_NUMBER_FORMS(operator>)
UGRAD_NUMBER_FORMS(operator>=)
UGRAD_NUMBER_FORMS(operator&)
UGRAD_NUMBER_FORMS(operator|)
UGRAD_NUMBER_FORMS(operator^)
UGRAD_NUMBER_FORMS(maximum)
UGRAD_NUMBER_FORMS(minimum)
UGRAD_NUMBER_FORMS(idiv)
UGRAD_NUMBER_FORMS(mod)
UGRAD_NUMBER_FORMS(floordiv)
#undef UGRAD_NUMBER_FORMS

}  // namespace ugrad
