#include "codegen/render/llvm_types.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "base/error.h"
#include "base/float16.h"

namespace ugrad {

std::string ltype(DType t) {
  if (t.is_ptr) return "ptr";
  switch (t.scalar) {
    case Scalar::Bool:
      return "i1";
    case Scalar::Int8:
    case Scalar::UInt8:
      return "i8";
    case Scalar::Int16:
    case Scalar::UInt16:
      return "i16";
    case Scalar::Int32:
    case Scalar::UInt32:
      return "i32";
    case Scalar::Int64:
    case Scalar::UInt64:
    case Scalar::Index:
      return "i64";
    case Scalar::Float16:
      return "half";
    case Scalar::BFloat16:
      return "bfloat";
    case Scalar::Float32:
      return "float";
    case Scalar::Float64:
      return "double";
    default:
      internal_error("render_llvm: no LLVM type for {}", to_string(t));
  }
}
std::string mtype(DType t) { return t.scalar == Scalar::Bool ? "i8" : ltype(t); }
std::string intrinsic_suffix(DType t) {
  switch (t.scalar) {
    case Scalar::Float16:
      return "f16";
    case Scalar::Float32:
      return "f32";
    case Scalar::Float64:
      return "f64";
    default:
      internal_error("render_llvm: no float intrinsic for {}", to_string(t));
  }
}
std::string mem_suffix(DType t) {
  if (is_float(t)) return t.scalar == Scalar::BFloat16 ? "bf16" : intrinsic_suffix(t);
  return mtype(t).substr(0);
}
bool is_signed(DType t) { return !is_unsigned(t) && !is_bool(t); }
int bits(DType t) { return t.scalar == Scalar::Bool ? 1 : int(itemsize(t.base()) * 8); }

std::string const_literal(const UOp& c) {
  const DType t = c.dtype();
  if (is_bool(t)) return c.const_int() ? "true" : "false";
  if (is_float(t)) {
    const double v = c.const_value();
    switch (t.scalar) {
      case Scalar::Float16:
        return fmt::format("0xH{:04X}", float_to_half(float(v)));
      case Scalar::BFloat16:
        return fmt::format("0xR{:04X}", float_to_bf16(float(v)));
      case Scalar::Float32:
        return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(double(float(v))));
      default:
        return fmt::format("0x{:016X}", std::bit_cast<uint64_t>(v));
    }
  }
  // Printed as the signed value of its width, which LLVM's parser accepts for every int type.
  const int b = bits(t);
  int64_t v = c.const_int();
  if (b < 64) v = int64_t(uint64_t(v) << (64 - b)) >> (64 - b);
  return fmt::format("{}", v);
}

}  // namespace ugrad
