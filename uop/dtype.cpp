#include "uop/dtype.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "base/error.h"

namespace ugrad {
namespace {

struct ScalarInfo {
  const char* name;
  size_t size;
  char kind;
};

constexpr ScalarInfo kScalars[] = {
#define UGRAD_SCALAR_INFO(name, str, size, kind) {str, size, kind},
    UGRAD_FOR_EACH_SCALAR(UGRAD_SCALAR_INFO)
#undef UGRAD_SCALAR_INFO
};

const ScalarInfo& info(Scalar s) { return kScalars[static_cast<int>(s)]; }

// The promotion lattice: each type lists the types directly above it.
// bool -> weakint -> {int8, uint8}; ... {int64, uint64} -> weakfloat -> {float16, bfloat16} -> ...
std::vector<Scalar> parents(Scalar s) {
  using S = Scalar;
  switch (s) {
    case S::Bool:
      return {S::WeakInt};
    case S::WeakInt:
      return {S::Int8, S::UInt8};
    case S::Int8:
      return {S::Int16};
    case S::Int16:
      return {S::Int32};
    case S::Int32:
      return {S::Int64};
    case S::Int64:
      return {S::WeakFloat};
    case S::UInt8:
      return {S::Int16, S::UInt16};
    case S::UInt16:
      return {S::Int32, S::UInt32};
    case S::UInt32:
      return {S::Int64, S::UInt64};
    case S::UInt64:
      return {S::WeakFloat};
    case S::WeakFloat:
      return {S::Float16, S::BFloat16};
    case S::Float16:
      return {S::Float32};
    case S::BFloat16:
      return {S::Float32};
    case S::Float32:
      return {S::Float64};
    default:
      return {};
  }
}

// Bit set of s and everything above it in the lattice.
uint32_t upward_closure(Scalar s) {
  uint32_t set = 0;
  std::vector<Scalar> todo{s};
  while (!todo.empty()) {
    Scalar t = todo.back();
    todo.pop_back();
    if (set & (1u << static_cast<int>(t))) continue;
    set |= 1u << static_cast<int>(t);
    for (Scalar p : parents(t)) todo.push_back(p);
  }
  return set;
}

}  // namespace

std::string to_string(DType t) {
  std::string s = info(t.scalar).name;
  if (t.count != 1) s += fmt::format(".vec({})", t.count);
  if (t.is_ptr) {
    if (t.addrspace == AddrSpace::Local) s += "[local]";
    if (t.addrspace == AddrSpace::Reg) s += "[reg]";
    s += "*";
  }
  return s;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kScalars); ++i)
    if (name == kScalars[i].name) return DType(static_cast<Scalar>(i));
  return std::nullopt;
}

std::span<const DType> all_scalar_dtypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (size_t i = 1; i < std::size(kScalars); ++i) v.emplace_back(static_cast<Scalar>(i));
    return v;
  }();
  return all;
}

size_t itemsize(DType t) { return t.is_ptr ? 8 : info(t.scalar).size * t.count; }
bool is_float(DType t) { return info(t.scalar).kind == 'f' || t.scalar == Scalar::WeakFloat; }
bool is_int(DType t) {
  char k = info(t.scalar).kind;
  return k == 'i' || k == 'u' || k == 'x' || t.scalar == Scalar::WeakInt;
}
bool is_unsigned(DType t) { return info(t.scalar).kind == 'u'; }
bool is_bool(DType t) { return t.scalar == Scalar::Bool; }
bool is_weak(DType t) { return info(t.scalar).kind == 'w'; }

DType least_upper_dtype(std::span<const DType> ts) {
  if (ts.empty()) internal_error("least_upper_dtype of no dtypes");
  uint32_t common = ~0u;
  for (DType t : ts) {
    if (t.scalar == Scalar::Index) return dtypes::index;  // index math stays index
    common &= upward_closure(t.scalar);
  }
  // The least upper bound is the common ancestor whose own closure is the whole common set.
  for (size_t i = 0; i < std::size(kScalars); ++i) {
    if (!(common & (1u << i))) continue;
    if (upward_closure(static_cast<Scalar>(i)) == common) return DType(static_cast<Scalar>(i));
  }
  internal_error("promotion lattice has no least upper bound");
}

DType least_upper_dtype(DType a, DType b) {
  DType ts[] = {a, b};
  return least_upper_dtype(ts);
}

DType strong(DType t) {
  if (t.scalar == Scalar::WeakInt) return dtypes::default_int;
  if (t.scalar == Scalar::WeakFloat) return dtypes::default_float;
  return t;
}

DType sum_acc_dtype(DType t) {
  t = strong(t);
  if (is_unsigned(t)) return least_upper_dtype(t, dtypes::uint32);
  if (is_int(t) || is_bool(t)) return least_upper_dtype(t, dtypes::int32);
  return least_upper_dtype(t, dtypes::float32);
}

double dtype_min(DType t) {
  switch (t.scalar) {
    case Scalar::Bool:
      return 0;
    case Scalar::Int8:
      return std::numeric_limits<int8_t>::min();
    case Scalar::Int16:
      return std::numeric_limits<int16_t>::min();
    case Scalar::Int32:
    case Scalar::WeakInt:
      return std::numeric_limits<int32_t>::min();
    case Scalar::Int64:
    case Scalar::Index:
      return static_cast<double>(std::numeric_limits<int64_t>::min());
    case Scalar::UInt8:
    case Scalar::UInt16:
    case Scalar::UInt32:
    case Scalar::UInt64:
      return 0;
    default:
      return -dtype_max(t);
  }
}

double dtype_max(DType t) {
  switch (t.scalar) {
    case Scalar::Bool:
      return 1;
    case Scalar::Int8:
      return std::numeric_limits<int8_t>::max();
    case Scalar::Int16:
      return std::numeric_limits<int16_t>::max();
    case Scalar::Int32:
    case Scalar::WeakInt:
      return std::numeric_limits<int32_t>::max();
    case Scalar::Int64:
    case Scalar::Index:
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    case Scalar::UInt8:
      return std::numeric_limits<uint8_t>::max();
    case Scalar::UInt16:
      return std::numeric_limits<uint16_t>::max();
    case Scalar::UInt32:
      return std::numeric_limits<uint32_t>::max();
    case Scalar::UInt64:
      return static_cast<double>(std::numeric_limits<uint64_t>::max());
    case Scalar::Float16:
      return 65504.0;
    case Scalar::BFloat16:
      return 3.3895313892515355e38;
    case Scalar::Float32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

}  // namespace ugrad
