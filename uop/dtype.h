// DTypes: scalar kinds, vectors and pointers, item sizes, and the promotion lattice (weak types for
// literals, as in JAX and tinygrad).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ugrad {

// X(enumerator, printed name, item size in bytes, kind: 'b' bool, 'i' signed, 'u' unsigned,
//   'f' float, 'w' weak literal type, 'x' index, 'v' void)
#define UGRAD_FOR_EACH_SCALAR(X)    \
  X(Void, "void", 0, 'v')           \
  X(Bool, "bool", 1, 'b')           \
  X(Int8, "int8", 1, 'i')           \
  X(Int16, "int16", 2, 'i')         \
  X(Int32, "int32", 4, 'i')         \
  X(Int64, "int64", 8, 'i')         \
  X(UInt8, "uint8", 1, 'u')         \
  X(UInt16, "uint16", 2, 'u')       \
  X(UInt32, "uint32", 4, 'u')       \
  X(UInt64, "uint64", 8, 'u')       \
  X(Float16, "float16", 2, 'f')     \
  X(BFloat16, "bfloat16", 2, 'f')   \
  X(Float32, "float32", 4, 'f')     \
  X(Float64, "float64", 8, 'f')     \
  X(WeakInt, "weakint", 0, 'w')     \
  X(WeakFloat, "weakfloat", 0, 'w') \
  X(Index, "index", 8, 'x')

enum class Scalar : uint8_t {
#define UGRAD_SCALAR_ENUM(name, str, size, kind) name,
  UGRAD_FOR_EACH_SCALAR(UGRAD_SCALAR_ENUM)
#undef UGRAD_SCALAR_ENUM
};

/// Where a pointer points: device memory, workgroup-shared memory (LDS) or registers.
enum class AddrSpace : uint8_t { Global, Local, Reg };

/// A scalar, a vector of `count` scalars, or a pointer to them. Small, compared by value.
struct DType {
  Scalar scalar = Scalar::Void;
  uint16_t count = 1;  // vector width (1 = scalar)
  bool is_ptr = false;
  AddrSpace addrspace = AddrSpace::Global;

  constexpr DType() = default;
  constexpr DType(Scalar s) : scalar(s) {}  // NOLINT: scalars convert implicitly
  constexpr DType(Scalar s, uint16_t n, bool ptr, AddrSpace as)
      : scalar(s), count(n), is_ptr(ptr), addrspace(as) {}

  /// The vector of n of this scalar.
  constexpr DType vec(uint16_t n) const { return {scalar, n, is_ptr, addrspace}; }
  /// A pointer to this dtype in the given address space.
  constexpr DType ptr(AddrSpace as = AddrSpace::Global) const { return {scalar, count, true, as}; }
  /// The element type: scalar, not a pointer.
  constexpr DType base() const { return DType(scalar); }

  friend constexpr bool operator==(const DType&, const DType&) = default;
};

namespace dtypes {
inline constexpr DType void_{Scalar::Void}, bool_{Scalar::Bool}, int8{Scalar::Int8},
    int16{Scalar::Int16}, int32{Scalar::Int32}, int64{Scalar::Int64}, uint8{Scalar::UInt8},
    uint16{Scalar::UInt16}, uint32{Scalar::UInt32}, uint64{Scalar::UInt64},
    float16{Scalar::Float16}, bfloat16{Scalar::BFloat16}, float32{Scalar::Float32},
    float64{Scalar::Float64}, weakint{Scalar::WeakInt}, weakfloat{Scalar::WeakFloat},
    index{Scalar::Index};
/// Storage type of literals without an explicit dtype.
inline constexpr DType default_int = int32, default_float = float32;
}  // namespace dtypes

/// Printed name: "float32", "float32.vec(4)", "float32*", "float32[local]*".
std::string to_string(DType t);
/// The dtype with this printed scalar name ("float32", "int8", ...), or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);
/// Every scalar dtype (excluding void), in declaration order.
std::span<const DType> all_scalar_dtypes();

/// Bytes of one element (times the vector width); pointers are 8 bytes.
size_t itemsize(DType t);
bool is_float(DType t);     // float16/bfloat16/float32/float64/weakfloat
bool is_int(DType t);       // signed, unsigned, weakint or index
bool is_unsigned(DType t);  // uint8..uint64
bool is_bool(DType t);
bool is_weak(DType t);  // a literal type that adopts the other operand's dtype

/// The smallest dtype every input converts to without loss in the promotion lattice.
DType least_upper_dtype(std::span<const DType> ts);
DType least_upper_dtype(DType a, DType b);
/// Storage dtype of a weak type (weakint -> int32, weakfloat -> float32); others unchanged.
DType strong(DType t);
/// Accumulator dtype of a sum: ints to at least int32 (unsigned: uint32), floats to at least
/// float32.
DType sum_acc_dtype(DType t);
/// Smallest and largest finite value of a scalar type (ints exact; floats as double).
double dtype_min(DType t);
double dtype_max(DType t);

}  // namespace ugrad
