// Reference semantics of every elementwise op, per dtype: the one definition that constant folding
// (and a reference interpreter) use. Values travel as ConstValue, the same payloads CONST carries:
// bool for bool, int64_t for every integer type (unsigned values as their two's complement bit
// pattern, e.g. uint64 0xffff... is -1), double for floats (already rounded to the dtype).
//
// Integers wrap to the dtype's width (two's complement). IDIV truncates toward zero and MOD takes
// the dividend's sign (C, LLVM sdiv/srem; udiv/urem for unsigned). Division by zero is defined, not
// UB: x // 0 == -1 (all ones) and x % 0 == x, as RISC-V does; INT_MIN // -1 wraps to INT_MIN and
// INT_MIN % -1 is 0. Shift amounts are masked to the width (x << (s & (bits-1))); SHR is arithmetic
// for signed types, logical for unsigned ones. Float ops round to the dtype: float32 in float
// arithmetic, float16/bfloat16 rounded from float (base/float16.h), float64 and weakfloat in
// double. MAX of floats propagates NaN. CAST float -> int saturates at the dtype's bounds and maps
// NaN to 0 (as Rust's `as`); CAST -> bool is `!= 0` (NaN is true). index and weakint behave as
// int64.
#pragma once
#include <cstdint>
#include <span>
#include <variant>

#include "uop/dtype.h"
#include "uop/ops.h"
#include "uop/uop.h"

namespace ugrad {

/// A constant's value: the payload a CONST of that dtype carries.
using ConstValue = std::variant<bool, int64_t, double>;

/// Evaluates `op` on constant operands. `dtype` is the result dtype; `src_dtype` the dtype of the
/// operands (needed by comparisons, CAST and BITCAST; for WHERE the value operands); it defaults to
/// `dtype`. `arg` is the node's arg, read by DOT4 (its Dot4Arg) and BYTE_LUT (its table). Throws
/// InternalError for ops that are not elementwise or combinations that make no sense (a BITCAST
/// between different sizes, FDIV of ints, DOT4 without its Dot4Arg).
ConstValue exec_alu(Op op, DType dtype, std::span<const ConstValue> operands, DType src_dtype,
                    const Arg& arg = {});
ConstValue exec_alu(Op op, DType dtype, std::span<const ConstValue> operands);

/// The value `v` converted to `dtype` exactly as CAST does (wrapping, rounding, saturating).
ConstValue cast_value(ConstValue v, DType from, DType dtype);
/// Rounds a double to the precision and range of the float dtype (round to nearest even).
double round_to_float_dtype(double v, DType dtype);
/// Wraps an integer to the width of the integer dtype (sign- or zero-extended back to int64).
int64_t wrap_to_int_dtype(uint64_t bits, DType dtype);

/// The value as int64 / double / bool, converting (ints exact, doubles truncated).
int64_t const_as_int(const ConstValue& v);
double const_as_double(const ConstValue& v);
bool const_as_bool(const ConstValue& v);

}  // namespace ugrad
