#include "uop/alu.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/float16.h"

namespace ugrad {

int64_t const_as_int(const ConstValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* b = std::get_if<bool>(&v)) return *b;
  double d = std::get<double>(v);
  if (std::isnan(d)) return 0;
  if (d >= 0x1p63) return std::numeric_limits<int64_t>::max();
  if (d < -0x1p63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}
double const_as_double(const ConstValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return static_cast<double>(std::get<int64_t>(v));
}
bool const_as_bool(const ConstValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<int64_t>(&v)) return *i != 0;
  double d = std::get<double>(v);
  return d != 0 || std::isnan(d);
}

namespace {

// Bits of an integer dtype; index and weakint compute as int64.
int int_bits(DType t) {
  if (t.scalar == Scalar::Index || t.scalar == Scalar::WeakInt) return 64;
  return static_cast<int>(itemsize(t.base()) * 8);
}
bool is_signed_int(DType t) { return is_int(t) && !is_unsigned(t); }
bool is_wide_float(DType t) { return t.scalar == Scalar::Float64 || t.scalar == Scalar::WeakFloat; }

// double -> float rounding to odd: an inexact result gets its last bit set. A later
// round-to-nearest-even to a format with at most 22 significant bits (half: 11, bfloat16: 8) then
// equals one correct rounding of the double (round-to-odd needs p + 2 intermediate bits).
float to_float_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// An integer magnitude as a float rounded to odd (exact in 24 significant bits).
float int_to_float_odd(uint64_t mag) {
  if (mag == 0) return 0.0f;
  int msb = 63 - std::countl_zero(mag);
  if (msb >= 24) {
    int shift = msb - 23;
    uint64_t low = mag & ((uint64_t(1) << shift) - 1);
    mag >>= shift;
    if (low) mag |= 1;
    return std::ldexp(static_cast<float>(mag), shift);
  }
  return static_cast<float>(mag);
}

double round_float(float odd_or_exact, DType t) {
  if (t.scalar == Scalar::Float16) return half_to_float(float_to_half(odd_or_exact));
  if (t.scalar == Scalar::BFloat16) return bf16_to_float(float_to_bf16(odd_or_exact));
  return odd_or_exact;
}

// An integer (signed value or unsigned bit pattern) converted to a float dtype with one rounding.
double int_to_float(uint64_t bits, bool is_signed, DType t) {
  bool negative = is_signed && static_cast<int64_t>(bits) < 0;
  uint64_t mag = negative ? uint64_t(0) - bits : bits;
  if (is_wide_float(t)) {
    double d = static_cast<double>(mag);
    return negative ? -d : d;
  }
  float f = t.scalar == Scalar::Float32 ? static_cast<float>(mag) : int_to_float_odd(mag);
  return round_float(negative ? -f : f, t);
}

// A float value converted to an integer dtype: truncate, saturate, NaN -> 0.
int64_t float_to_int(double d, DType t) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  if (t.scalar == Scalar::UInt64) {
    if (d <= 0) return 0;
    if (d >= 0x1p64) return -1;  // all ones
    return static_cast<int64_t>(static_cast<uint64_t>(d));
  }
  if (int_bits(t) == 64) return const_as_int(ConstValue(d));
  double lo = dtype_min(t), hi = dtype_max(t);
  return static_cast<int64_t>(std::clamp(d, lo, hi));
}

// The raw bits of a value of dtype t (for BITCAST).
uint64_t raw_bits(const ConstValue& v, DType t) {
  switch (t.scalar) {
    case Scalar::Bool:
      return const_as_bool(v);
    case Scalar::Float16:
      return float_to_half(static_cast<float>(const_as_double(v)));
    case Scalar::BFloat16:
      return float_to_bf16(static_cast<float>(const_as_double(v)));
    case Scalar::Float32:
      return std::bit_cast<uint32_t>(static_cast<float>(const_as_double(v)));
    case Scalar::Float64:
    case Scalar::WeakFloat:
      return std::bit_cast<uint64_t>(const_as_double(v));
    default: {
      int bits = int_bits(t);
      uint64_t x = static_cast<uint64_t>(const_as_int(v));
      return bits == 64 ? x : x & ((uint64_t(1) << bits) - 1);
    }
  }
}

ConstValue from_raw_bits(uint64_t bits, DType t) {
  switch (t.scalar) {
    case Scalar::Bool:
      return (bits & 1) != 0;
    case Scalar::Float16:
      return static_cast<double>(half_to_float(static_cast<uint16_t>(bits)));
    case Scalar::BFloat16:
      return static_cast<double>(bf16_to_float(static_cast<uint16_t>(bits)));
    case Scalar::Float32:
      return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case Scalar::Float64:
    case Scalar::WeakFloat:
      return std::bit_cast<double>(bits);
    default:
      return wrap_to_int_dtype(bits, t);
  }
}

[[noreturn]] void unsupported(Op op, DType t) {
  internal_error("exec_alu: {} is not defined on {}", op_name(op), to_string(t));
}

ConstValue bool_op(Op op, std::span<const ConstValue> v) {
  bool a = const_as_bool(v[0]);
  bool b = v.size() > 1 ? const_as_bool(v[1]) : false;
  switch (op) {
    case Op::ADD:
    case Op::OR:
    case Op::MAX:
      return a || b;
    case Op::MUL:
    case Op::AND:
      return a && b;
    case Op::XOR:
    case Op::CMPNE:
      return a != b;
    case Op::CMPEQ:
      return a == b;
    case Op::CMPLT:
      return !a && b;
    default:
      unsupported(op, dtypes::bool_);
  }
}

uint64_t ipow(uint64_t base, int64_t exp, bool is_signed) {
  if (exp < 0) {  // 1/base^|exp| truncated: nonzero only for base 1 and -1
    if (base == 1) return 1;
    if (is_signed && static_cast<int64_t>(base) == -1) return (exp & 1) ? base : 1;
    return 0;
  }
  uint64_t r = 1;
  for (uint64_t e = static_cast<uint64_t>(exp); e; e >>= 1, base *= base)
    if (e & 1) r *= base;
  return r;
}

// Integer ops on the operands of dtype t (signed values or unsigned bit patterns, zero-extended).
ConstValue int_op(Op op, DType t, DType result, std::span<const ConstValue> v) {
  const bool sgn = is_signed_int(t);
  const int bits = int_bits(t);
  const uint64_t a = static_cast<uint64_t>(const_as_int(v[0]));
  const uint64_t b = v.size() > 1 ? static_cast<uint64_t>(const_as_int(v[1])) : 0;
  const int64_t sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  auto wrap = [&](uint64_t x) -> ConstValue { return wrap_to_int_dtype(x, result); };
  switch (op) {
    case Op::ADD:
      return wrap(a + b);
    case Op::SUB:
      return wrap(a - b);
    case Op::MUL:
      return wrap(a * b);
    case Op::NEG:
      return wrap(uint64_t(0) - a);
    case Op::IDIV:
      if (b == 0) return wrap(~uint64_t(0));
      if (!sgn) return wrap(a / b);
      if (sb == -1) return wrap(uint64_t(0) - a);  // INT_MIN // -1 wraps to INT_MIN
      return wrap(static_cast<uint64_t>(sa / sb));
    case Op::MOD:
      if (b == 0) return wrap(a);
      if (!sgn) return wrap(a % b);
      if (sb == -1) return wrap(0);
      return wrap(static_cast<uint64_t>(sa % sb));
    case Op::MAX:
      return wrap(sgn ? (sa < sb ? b : a) : (a < b ? b : a));
    case Op::CMPLT:
      return sgn ? sa < sb : a < b;
    case Op::CMPNE:
      return a != b;
    case Op::CMPEQ:
      return a == b;
    case Op::AND:
      return wrap(a & b);
    case Op::OR:
      return wrap(a | b);
    case Op::XOR:
      return wrap(a ^ b);
    case Op::SHL:
      return wrap(a << (b & uint64_t(bits - 1)));
    case Op::SHR:
      return wrap(sgn ? static_cast<uint64_t>(sa >> (b & uint64_t(bits - 1)))
                      : a >> (b & uint64_t(bits - 1)));
    case Op::POW:
      return wrap(ipow(a, sb, sgn));
    case Op::MULACC:
      return wrap(a * b + static_cast<uint64_t>(const_as_int(v[2])));
    default:
      unsupported(op, t);
  }
}

// DOT4: acc + the 4 byte products of the words a and b, each side's bytes int8 or uint8.
ConstValue dot4_op(DType result, std::span<const ConstValue> v, const Dot4Arg& signs) {
  auto byte = [](const ConstValue& word, int j, bool is_signed) -> int64_t {
    const auto x = static_cast<uint8_t>(static_cast<uint64_t>(const_as_int(word)) >> (8 * j));
    return is_signed ? int64_t{static_cast<int8_t>(x)} : int64_t{x};
  };
  int64_t sum = const_as_int(v[2]);
  for (int j = 0; j < 4; ++j) sum += byte(v[0], j, signs.a_signed) * byte(v[1], j, signs.b_signed);
  return wrap_to_int_dtype(static_cast<uint64_t>(sum), result);
}

// BYTE_LUT: byte j of the result is table[byte j of the word & 15].
ConstValue byte_lut_op(DType result, const ConstValue& word, const std::vector<int64_t>& table) {
  const auto w = static_cast<uint32_t>(const_as_int(word));
  uint64_t r = 0;
  for (int j = 0; j < 4; ++j) r |= static_cast<uint64_t>(table[(w >> (8 * j)) & 15]) << (8 * j);
  return wrap_to_int_dtype(r, result);
}

// Float ops: float32/half/bfloat16 compute in float (exact operands; one rounding to float, then to
// the narrow type, is a correct rounding for + - * / sqrt), wide floats in double.
ConstValue float_op(Op op, DType t, DType result, std::span<const ConstValue> v) {
  const double a = const_as_double(v[0]);
  const double b = v.size() > 1 ? const_as_double(v[1]) : 0.0;
  const bool wide = is_wide_float(t);
  auto arith = [&](auto fn) -> ConstValue {
    if (wide) return fn(a, b);
    return round_float(fn(static_cast<float>(a), static_cast<float>(b)), t);
  };
  // Transcendentals: computed in double, rounded once to the dtype.
  auto transcendental = [&](double x) -> ConstValue { return round_to_float_dtype(x, t); };
  switch (op) {
    case Op::ADD:
      return arith([](auto x, auto y) { return x + y; });
    case Op::SUB:
      return arith([](auto x, auto y) { return x - y; });
    case Op::MUL:
      return arith([](auto x, auto y) { return x * y; });
    case Op::FDIV:
      return arith([](auto x, auto y) { return x / y; });
    case Op::NEG:
      return -a;
    case Op::MAX:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
      return a < b ? b : a;
    case Op::CMPLT:
      return a < b;
    case Op::CMPNE:
      return a != b;
    case Op::CMPEQ:
      return a == b;
    case Op::SQRT:
      return arith([](auto x, auto) { return std::sqrt(x); });
    case Op::RECIP:
      return arith([](auto x, auto) { return decltype(x)(1) / x; });
    case Op::TRUNC:
      return std::trunc(a);
    case Op::EXP2:
      return transcendental(std::exp2(a));
    case Op::LOG2:
      return transcendental(std::log2(a));
    case Op::SIN:
      return transcendental(std::sin(a));
    case Op::POW:
      return transcendental(std::pow(a, b));
    case Op::MULACC: {  // a*b, rounded, then + c, rounded (not fused)
      ConstValue p = float_op(Op::MUL, t, result, v.first(2));
      ConstValue pc[] = {p, v[2]};
      return float_op(Op::ADD, t, result, pc);
    }
    default:
      unsupported(op, t);
  }
}

}  // namespace

double round_to_float_dtype(double v, DType t) {
  if (is_wide_float(t)) return v;
  if (t.scalar == Scalar::Float32) return static_cast<float>(v);
  return round_float(to_float_odd(v), t);
}

int64_t wrap_to_int_dtype(uint64_t bits, DType t) {
  int w = int_bits(t);
  if (w >= 64) return static_cast<int64_t>(bits);
  uint64_t mask = (uint64_t(1) << w) - 1;
  bits &= mask;
  if (is_signed_int(t) && (bits >> (w - 1)) & 1) bits |= ~mask;  // sign-extend
  return static_cast<int64_t>(bits);
}

ConstValue cast_value(ConstValue v, DType from, DType to) {
  if (is_bool(to)) return const_as_bool(v);
  if (is_float(from)) {
    double d = const_as_double(v);
    if (is_float(to)) return round_to_float_dtype(d, to);
    return wrap_to_int_dtype(static_cast<uint64_t>(float_to_int(d, to)), to);
  }
  // from bool or an integer: its value as a signed int64 or an unsigned bit pattern
  uint64_t bits = static_cast<uint64_t>(const_as_int(v));
  if (is_float(to)) return int_to_float(bits, !is_unsigned(from) && !is_bool(from), to);
  if (is_int(to)) return wrap_to_int_dtype(bits, to);
  internal_error("cast_value: cannot cast {} to {}", to_string(from), to_string(to));
}

ConstValue exec_alu(Op op, DType dtype, std::span<const ConstValue> v, DType src, const Arg& arg) {
  if (!is_alu(op)) internal_error("exec_alu: {} is not an elementwise op", op_name(op));
  if (op_arity(op) >= 0 && v.size() != static_cast<size_t>(op_arity(op)))
    internal_error("exec_alu: {} takes {} operands, got {}", op_name(op), op_arity(op), v.size());
  switch (op) {
    case Op::WHERE:
      return const_as_bool(v[0]) ? v[1] : v[2];
    case Op::CAST:
      return cast_value(v[0], src, dtype);
    case Op::BITCAST:
      if (itemsize(src.base()) != itemsize(dtype.base()))
        internal_error("exec_alu: BITCAST from {} to {} changes the size", to_string(src),
                       to_string(dtype));
      return from_raw_bits(raw_bits(v[0], src), dtype);
    case Op::DOT4: {
      const auto* signs = std::get_if<Dot4Arg>(&arg);
      if (!signs || !is_int(dtype) || int_bits(dtype) != 32)
        internal_error("exec_alu: DOT4 takes a Dot4Arg and 32-bit words, got '{}' and {}",
                       arg_to_string(arg), to_string(dtype));
      return dot4_op(dtype, v, *signs);
    }
    case Op::BYTE_LUT: {
      const auto* table = std::get_if<std::vector<int64_t>>(&arg);
      if (!table || table->size() != 16 || !is_int(dtype) || int_bits(dtype) != 32)
        internal_error("exec_alu: BYTE_LUT takes a table of 16 and 32-bit words, got '{}' and {}",
                       arg_to_string(arg), to_string(dtype));
      return byte_lut_op(dtype, v[0], *table);
    }
    default:
      break;
  }
  if (is_bool(src)) return bool_op(op, v);
  if (is_int(src)) {
    if (op == Op::FDIV) unsupported(op, src);
    return int_op(op, src, is_comparison(op) ? src : dtype, v);
  }
  if (is_float(src)) {
    ConstValue r = float_op(op, src, dtype, v);
    if (auto* d = std::get_if<double>(&r); d && !is_comparison(op))
      return round_to_float_dtype(*d, dtype);
    return r;
  }
  unsupported(op, src);
}

ConstValue exec_alu(Op op, DType dtype, std::span<const ConstValue> operands) {
  return exec_alu(op, dtype, operands, dtype);
}

}  // namespace ugrad
