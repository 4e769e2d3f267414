#include <doctest/doctest.h>

#include "base/error.h"
#include "uop/uop.h"

using namespace ugrad;

TEST_CASE("interning: identical nodes are the same object") {
  UOp x = UOp::variable("x", 0, 10);
  UOp a = x * 4 + 3;
  UOp b = x * 4 + 3;
  CHECK(a == b);
  CHECK(a.node() == b.node());
  CHECK_FALSE(a == x * 4 + 2);
  CHECK(UOp::cnst(dtypes::float32, 0.0) == UOp::cnst(dtypes::float32, 0.0));
  // -0.0 and 0.0 are different constants; NaN equals itself.
  CHECK_FALSE(UOp::cnst(dtypes::float32, -0.0) == UOp::cnst(dtypes::float32, 0.0));
  double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(UOp::cnst(dtypes::float32, nan) == UOp::cnst(dtypes::float32, nan));
  CHECK_FALSE(UOp::cnst(dtypes::float32, 1.0) == UOp::cnst(dtypes::float16, 1.0));
}

TEST_CASE("nodes are freed when the last reference goes, and reinterned afresh") {
  size_t before = live_uop_count();
  {
    UOp x = UOp::variable("fresh_var_for_refcount", 0, 5);
    UOp e = (x + 1) * (x + 1);
    CHECK(live_uop_count() > before);
  }
  CHECK(live_uop_count() == before);
}

TEST_CASE("structural hash is stable across processes (golden value)") {
  UOp x = UOp::variable("x", 0, 100);
  UOp r = UOp::range(16, 0);
  UOp e = (x * 16 + r).idiv(4) % 7;
  // The hash depends only on (op, dtype, arg, sources): any process computes this value.
  CHECK(e.hash() == 0x889aea5aee3f89f0ull);  // changes only with the op table or the hash
  CHECK(e.hash() != (x * 16 + r).idiv(4).hash());
}

TEST_CASE("arity is checked against the op table") {
  UOp x = UOp::variable("x", 0, 3);
  CHECK_THROWS_AS(UOp::make(Op::ADD, dtypes::index, {x}), InternalError);
  CHECK_THROWS_AS(UOp::make(Op::WHERE, dtypes::index, {x, x}), InternalError);
}

TEST_CASE("a 100000-deep chain builds, sorts, prints, substitutes and frees without overflow") {
  size_t before = live_uop_count();
  {
    UOp x = UOp::variable("deep", 0, 1);
    UOp e = x;
    for (int i = 0; i < 100000; ++i) e = e + 1;
    CHECK(e.toposort().size() == 100000 + 2);  // variable, one shared constant, the adds
    std::string g = e.print_graph();
    CHECK(g.size() > 100000);
    CHECK(e.vmax() == 100001);
    UOp y = UOp::variable("deep2", 0, 1);
    UOp f = e.substitute({{x, y}});
    CHECK(f.vmin() == 100000);
    CHECK_FALSE(f == e);
  }
  CHECK(live_uop_count() == before);
}

TEST_CASE("printing") {
  UOp x = UOp::variable("x", 0, 10);
  UOp r = UOp::range(8, 1);
  CHECK((x * 4 + r).render() == "((x*4)+r1)");
  CHECK((x.lt(3)).where(x, x.max(2)).render() == "((x<3)?x:max(x, 2))");
  CHECK((-x).render() == "(-x)");
  CHECK(x.cast(dtypes::int32).render() == "CAST(int32, x)");
  CHECK((x + 1).print_graph() ==
        "%0 = PARAM index () x[0, 10]\n%1 = CONST index () 1\n%2 = ADD index (%0, %1)\n");
}

TEST_CASE("vmin/vmax basics") {
  UOp x = UOp::variable("x", 2, 9);
  UOp r = UOp::range(16, 0);
  CHECK((x * 3 + r).vmin() == 6);
  CHECK((x * 3 + r).vmax() == 42);
  CHECK((x * -2).vmin() == -18);
  CHECK((x * -2).vmax() == -4);
  CHECK(r.idiv(4).vmax() == 3);
  CHECK((r % 4).vmax() == 3);
  CHECK((x % 16).vmin() == 2);  // 0 <= x < 16: x % 16 == x
  CHECK(x.lt(10).vmin() == 1);
  CHECK(x.lt(5).vmin() == 0);
  CHECK(x.lt(5).vmax() == 1);
}

TEST_CASE("regression: integer constants hold their dtype's value (-1 as uint8 is 255)") {
  CHECK(UOp::cnst_int(dtypes::uint8, -1).const_int() == 255);
  CHECK(UOp::cnst_int(dtypes::int8, 200).const_int() == -56);
  CHECK(UOp::cnst(dtypes::uint16, -1.0).const_int() == 65535);
  CHECK(UOp::cnst_int(dtypes::index, -1).const_int() == -1);
}
