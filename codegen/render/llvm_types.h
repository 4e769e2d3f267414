// How LLVM IR spells ugrad's dtypes and constants: value and in-memory types, intrinsic overload
// suffixes, and constant literals. Used by the renderer.
#pragma once
#include <string>

#include "uop/dtype.h"
#include "uop/uop.h"

namespace ugrad {

/// The LLVM type of a value of `t` ("i1", "i32", "half", "ptr", ...).
std::string ltype(DType t);
/// The LLVM type of `t` in memory: a bool is a byte.
std::string mtype(DType t);
/// Overload suffix of a float math intrinsic: f16, f32, f64.
std::string intrinsic_suffix(DType t);
/// Overload suffix of a memory element type: f32, bf16, i8 (bool), ...
std::string mem_suffix(DType t);
/// Signed integer semantics (not unsigned, not bool).
bool is_signed(DType t);
/// Bits of a value of `t` (1 for bool).
int bits(DType t);
/// The literal of a CONST node in `t`'s LLVM spelling (hex floats, signed ints of its width).
std::string const_literal(const UOp& c);

}  // namespace ugrad
