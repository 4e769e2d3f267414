#include <doctest/doctest.h>

#include "base/error.h"
#include "uop/shape.h"

using namespace ugrad;

namespace {
UOp buffer(int64_t n, int64_t id = 1) {
  return UOp::make(Op::BUFFER, dtypes::float32, {}, BufferArg{id, n, "CPU"});
}
UOp reshape(const UOp& x, const std::vector<int64_t>& d) {
  std::vector<UOp> src{x};
  for (int64_t v : d) src.push_back(dim(v));
  return UOp::make(Op::RESHAPE, x.dtype(), src);
}
}  // namespace

TEST_CASE("shape inference of movement and reduce ops") {
  UOp b = buffer(24);
  CHECK(shape_str(shape_of(b)) == "(24,)");
  UOp r = reshape(b, {2, 3, 4});
  CHECK(static_dims(shape_of(r)) == std::vector<int64_t>{2, 3, 4});
  UOp p = UOp::make(Op::PERMUTE, r.dtype(), {r}, std::vector<int64_t>{2, 0, 1});
  CHECK(static_dims(shape_of(p)) == std::vector<int64_t>{4, 2, 3});
  UOp pad = UOp::make(Op::PAD, r.dtype(), {r, dim(1), dim(0), dim(0), dim(0), dim(2), dim(1)});
  CHECK(static_dims(shape_of(pad)) == std::vector<int64_t>{3, 5, 5});
  UOp sh = UOp::make(Op::SHRINK, r.dtype(), {r, dim(0), dim(1), dim(2), dim(2), dim(3), dim(4)});
  CHECK(static_dims(shape_of(sh)) == std::vector<int64_t>{2, 2, 2});
  UOp red = UOp::make(Op::REDUCE_AXIS, r.dtype(), {r}, ReduceArg{Op::ADD, {1}});
  CHECK(static_dims(shape_of(red)) == std::vector<int64_t>{2, 1, 4});
  UOp ex = UOp::make(Op::EXPAND, r.dtype(), {red, dim(2), dim(7), dim(4)});
  CHECK(static_dims(shape_of(ex)) == std::vector<int64_t>{2, 7, 4});
  CHECK(shape_of(ex + ex).size() == 3);
}

TEST_CASE("symbolic dims") {
  UOp t = UOp::variable("T", 1, 32);
  UOp b = buffer(32 * 8);
  UOp r = reshape(b, {32, 8});
  UOp sh = UOp::make(Op::SHRINK, r.dtype(), {r, dim(0), dim(0), t, dim(8)});
  const Shape& s = shape_of(sh);
  CHECK(s[0] == t);
  CHECK(max_dims(s) == std::vector<int64_t>{32, 8});
  CHECK(!static_dims(s).has_value());
  CHECK(shape_str(s) == "(T, 8)");
}

TEST_CASE("bad shapes are errors naming the shapes") {
  UOp b = buffer(24);
  CHECK_THROWS_WITH_AS(shape_of(reshape(b, {5, 5})), doctest::Contains("(24,) to (5, 5)"), Error);
  UOp r = reshape(b, {2, 12});
  CHECK_THROWS_WITH_AS(shape_of(UOp::make(Op::EXPAND, r.dtype(), {r, dim(3), dim(12)})),
                       doctest::Contains("axis 0"), Error);
  CHECK_THROWS_WITH_AS(shape_of(r + reshape(buffer(24, 2), {12, 2})),
                       doctest::Contains("ADD of shapes (2, 12) and (12, 2)"), Error);
  CHECK_THROWS_AS(shape_of(UOp::make(Op::SHRINK, r.dtype(), {r, dim(0), dim(0), dim(3), dim(12)})),
                  Error);
}
