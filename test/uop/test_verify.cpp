#include <doctest/doctest.h>

#include "base/env.h"
#include "base/error.h"
#include "uop/verify.h"

using namespace ugrad;

namespace {

UOp buffer(DType t, int64_t slot) {
  return UOp::make(Op::PARAM, t.ptr(), {}, ParamArg{slot, "", 0, 0});
}

// What verify reports for `u`, or "" when it passes.
std::string report(const UOp& u, std::string_view stage = {}) {
  try {
    verify(u, stage);
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("verify: a well-formed kernel passes") {
  UOp out = buffer(dtypes::float32, 0), in = buffer(dtypes::float32, 1);
  UOp r0 = UOp::range(16, 0), r1 = UOp::range(8, 1);
  UOp idx = r0 * 8 + r1;
  UOp gate = idx.lt(100);
  UOp ld = UOp::make(Op::LOAD, dtypes::float32,
                     {UOp::make(Op::INDEX, dtypes::float32.ptr(), {in, idx})});
  UOp gated = UOp::make(Op::LOAD, dtypes::float32,
                        {UOp::make(Op::INDEX, dtypes::float32.ptr(), {in, idx, gate}),
                         UOp::cnst(dtypes::float32, 0.0), gate});
  UOp acc = UOp::make(Op::REDUCE, dtypes::float32,
                      {ld * UOp::cnst(dtypes::float32, 2.0) + gated, r1}, Op::ADD);
  UOp st = UOp::make(Op::STORE, dtypes::void_,
                     {UOp::make(Op::INDEX, dtypes::float32.ptr(), {out, r0}), acc});
  UOp sink = UOp::make(Op::SINK, dtypes::void_, {UOp::make(Op::END, dtypes::void_, {st, r0})});
  CHECK(report(sink) == "");
  UOp v = UOp::variable("n", 1, 32);
  CHECK(report(v.lt(4).where(v * 2, v.idiv(3)) % 5) == "");
  CHECK(report(UOp::cnst(dtypes::float16, 1.5).alu(Op::SQRT).cast(dtypes::int32)) == "");
}

TEST_CASE("verify: malformed graphs name the op, the node and the broken rule") {
  UOp x = UOp::variable("x", 0, 10);
  UOp f = UOp::cnst(dtypes::float32, 1.0);
  // ALU sources of different dtypes
  std::string r = report(UOp::make(Op::ADD, dtypes::index, {x, f}));
  CHECK(r.find("ADD") != std::string::npos);
  CHECK(r.find("same dtype") != std::string::npos);
  CHECK(r.find("PARAM index, CONST float32") != std::string::npos);
  // a comparison that gives an int
  CHECK(report(UOp::make(Op::CMPLT, dtypes::index, {x, x})).find("gives bool") !=
        std::string::npos);
  // a WHERE with an int condition
  CHECK(report(UOp::make(Op::WHERE, dtypes::index, {x, x, x})).find("condition is bool") !=
        std::string::npos);
  // a float RANGE end
  CHECK(report(UOp::make(Op::RANGE, dtypes::index, {f}, RangeArg{0, AxisType::Loop}))
            .find("RANGE end is index") != std::string::npos);
  // an integer CONST holding a double
  CHECK(report(UOp::make(Op::CONST, dtypes::int32, {}, 1.5)).find("holds an int64") !=
        std::string::npos);
  // INDEX into a non-pointer; STORE of the wrong dtype; IDIV of floats; SQRT of ints
  CHECK(report(UOp::make(Op::INDEX, dtypes::float32.ptr(), {x, x})).find("pointer") !=
        std::string::npos);
  UOp p = buffer(dtypes::float32, 0);
  UOp st = UOp::make(Op::STORE, dtypes::void_, {UOp::make(Op::INDEX, p.dtype(), {p, x}), x});
  CHECK(report(st).find("pointee's dtype") != std::string::npos);
  CHECK(report(UOp::make(Op::IDIV, dtypes::float32, {f, f})).find("integers") != std::string::npos);
  CHECK(report(UOp::make(Op::SQRT, dtypes::index, {x})).find("floats") != std::string::npos);
  CHECK(report(UOp::make(Op::BITCAST, dtypes::int16, {f})).find("keeps the size") !=
        std::string::npos);
  // a broken node deep inside a good graph is found, and the stage is named
  UOp bad = UOp::make(Op::ADD, dtypes::index, {x, f});
  r = report((x + 1) * 2 + bad.lt(3).where(x, x), "lower");
  CHECK(r.find("verify lower") != std::string::npos);
  CHECK(r.find("bug in ugrad") != std::string::npos);
}

TEST_CASE("verify_if_enabled follows the VERIFY knob (always on in debug builds)") {
  UOp x = UOp::variable("x", 0, 10);
  UOp bad = UOp::make(Op::CMPLT, dtypes::index, {x, x});
  {
    ScopedKnob on(Knob::VERIFY, "1");
    CHECK_THROWS_AS(verify_if_enabled(bad, "test"), InternalError);
  }
  ScopedKnob off(Knob::VERIFY, "0");
#ifdef NDEBUG
  CHECK_NOTHROW(verify_if_enabled(bad, "test"));
#else
  CHECK_THROWS_AS(verify_if_enabled(bad, "test"), InternalError);
#endif
}
