#include <doctest/doctest.h>

#include "uop/dtype.h"

using namespace ugrad;
using namespace ugrad::dtypes;

TEST_CASE("item sizes and names") {
  CHECK(itemsize(bool_) == 1);
  CHECK(itemsize(float16) == 2);
  CHECK(itemsize(bfloat16) == 2);
  CHECK(itemsize(float32.vec(4)) == 16);
  CHECK(itemsize(int8.ptr()) == 8);
  CHECK(to_string(float32.vec(4)) == "float32.vec(4)");
  CHECK(to_string(float16.ptr(AddrSpace::Local)) == "float16[local]*");
  for (DType t : all_scalar_dtypes()) CHECK(dtype_from_name(to_string(t)) == t);
  CHECK_FALSE(dtype_from_name("float8").has_value());
}

TEST_CASE("promotion lattice") {
  struct Case {
    DType a, b, want;
  };
  const Case cases[] = {
      {int8, uint8, int16},
      {uint8, int16, int16},
      {int32, uint32, int64},
      {int64, uint64, weakfloat},
      {float16, bfloat16, float32},
      {float16, int64, float16},
      {bool_, bool_, bool_},
      {bool_, int8, int8},
      {int32, weakint, int32},
      {uint8, weakint, uint8},
      {int32, weakfloat, weakfloat},
      {float16, weakfloat, float16},
      {weakint, weakfloat, weakfloat},
      {float32, float64, float64},
      {bool_, weakint, weakint},
  };
  for (const Case& c : cases) {
    CAPTURE(to_string(c.a));
    CAPTURE(to_string(c.b));
    CHECK(least_upper_dtype(c.a, c.b) == c.want);
    CHECK(least_upper_dtype(c.b, c.a) == c.want);
  }
  CHECK(strong(weakfloat) == float32);
  CHECK(strong(weakint) == int32);
  CHECK(sum_acc_dtype(float16) == float32);
  CHECK(sum_acc_dtype(int8) == int32);
  CHECK(sum_acc_dtype(uint8) == uint32);
  CHECK(sum_acc_dtype(bool_) == int32);
  CHECK(sum_acc_dtype(float64) == float64);
}

TEST_CASE("the lattice is a semilattice: lub is commutative, associative, idempotent") {
  auto all = all_scalar_dtypes();
  for (DType a : all) {
    if (a == index || a == void_) continue;
    CHECK(least_upper_dtype(a, a) == a);
    for (DType b : all) {
      if (b == index || b == void_) continue;
      DType ab = least_upper_dtype(a, b);
      CHECK(ab == least_upper_dtype(b, a));
      for (DType c : all) {
        if (c == index || c == void_) continue;
        CHECK(least_upper_dtype(ab, c) == least_upper_dtype(a, least_upper_dtype(b, c)));
      }
    }
  }
}
