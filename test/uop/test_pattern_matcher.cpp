#include <doctest/doctest.h>

#include "base/env.h"
#include "base/error.h"
#include "uop/pattern_matcher.h"

using namespace ugrad;

TEST_CASE("patterns bind names, match constants and respect dtypes") {
  UOp x = UOp::variable("x", 0, 10);
  Match m(x, nullptr);
  UOp e = x * 4 + 3;
  // Bindings point at the pattern's names: the pattern must outlive the match.
  const UPat sum = UPat::var("a") + UPat::cvar("c");
  CHECK(upat_match(sum, e, m));
  CHECK(m["a"] == x * 4);
  CHECK(m["c"].const_int() == 3);
  m.binds.clear();
  // Commutative: the constant may come first.
  CHECK(upat_match(sum, UOp::cnst_int(dtypes::index, 3) + x, m));
  m.binds.clear();
  CHECK_FALSE(upat_match(UPat::var("a") * UPat::cnst(5), e, m));
  CHECK_FALSE(upat_match(UPat::var("a", dt_float) + UPat::cvar("c"), e, m));
  // A repeated name must bind the same node.
  m.binds.clear();
  const UPat twice = UPat::var("a") + UPat::var("a");
  CHECK(upat_match(twice, x + x, m));
  m.binds.clear();
  CHECK_FALSE(upat_match(twice, x + (x + 1), m));
}

TEST_CASE("matching backtracks through nested commutative sources") {
  UOp a = UOp::variable("a", 0, 3), b = UOp::variable("b", 0, 3), c = UOp::variable("c", 0, 3);
  // (a*b) + (b*c) matches (x*y) + (x*z) only with x = b: the first product must be tried swapped.
  const UPat p = (UPat::var("x") * UPat::var("y")) + (UPat::var("x") * UPat::var("z"));
  Match m(a, nullptr);
  REQUIRE(upat_match(p, (a * b) + (b * c), m));
  CHECK(m["x"] == b);
  CHECK(m["y"] == a);
  CHECK(m["z"] == c);
}

TEST_CASE("graph_rewrite folds to a fixed point, sources first") {
  PatternMatcher pm({
      // x + 0 -> x
      {UPat::var("x") + UPat::cnst(0), [](const Match& m) { return m["x"]; }},
      // c0 + c1 -> (c0+c1)
      {UPat::cvar("a") + UPat::cvar("b"),
       [](const Match& m) {
         return std::optional(
             UOp::cnst_int(m["a"].dtype(), m["a"].const_int() + m["b"].const_int()));
       }},
  });
  UOp x = UOp::variable("x", 0, 10);
  auto c = [](int64_t v) { return UOp::cnst_int(dtypes::index, v); };
  UOp e = x + (c(2) + c(-2));
  CHECK(graph_rewrite(e, pm) == x);
  CHECK(graph_rewrite((x + (c(1) + c(2))) * (c(3) + c(0)), pm) == (x + 3) * 3);
}

TEST_CASE("bottom-up rewrite sees the node before its sources") {
  int seen_outer_first = 0;
  UOp x = UOp::variable("x", 0, 10);
  UOp e = (x + 1) * 2;
  PatternMatcher pm({
      {UPat(Op::MUL),
       [&](const Match& m) -> std::optional<UOp> {
         // In bottom-up mode the MUL is visited while its ADD source is still unrewritten.
         if (m.root().src(0).op() == Op::ADD) ++seen_outer_first;
         return std::nullopt;
       }},
      {UPat(Op::ADD, {UPat::var("v"), UPat::cnst(1)}), [](const Match& m) { return m["v"]; }},
  });
  CHECK(graph_rewrite(e, pm, nullptr, true) == x * 2);
  CHECK(seen_outer_first == 1);
}

TEST_CASE("a looping rule set hits the step limit with an error naming the rule and op") {
  ScopedKnob limit(Knob::REWRITE_LIMIT, "1000");
  // x + c -> (x + c) + 0 and back: the rules undo each other forever.
  PatternMatcher pm({
      {UPat::var("x") + UPat::cnst(0), [](const Match& m) { return m["x"] + 1; }},
      {UPat::var("x") + UPat::cnst(1),
       [](const Match& m) { return m["x"] + UOp::cnst_int(dtypes::index, 0); }},
  });
  UOp x = UOp::variable("x", 0, 10);
  CHECK_THROWS_WITH_AS(graph_rewrite(x + 1, pm),
                       doctest::Contains("test/uop/test_pattern_matcher.cpp"), Error);
  CHECK_THROWS_WITH_AS(graph_rewrite(x + 1, pm), doctest::Contains("on ADD"), Error);
  CHECK_THROWS_WITH_AS(graph_rewrite(x + 1, pm), doctest::Contains("more than 1000"), Error);
}

TEST_CASE("a 100000-deep chain rewrites without overflow") {
  PatternMatcher pm({
      {UPat::var("x") + UPat::cnst(1), [](const Match& m) { return m["x"] * 1; }},
  });
  UOp x = UOp::variable("x", 0, 1);
  UOp e = x;
  for (int i = 0; i < 100000; ++i) e = e + 1;
  UOp r = graph_rewrite(e, pm);
  CHECK(r.op() == Op::MUL);
  CHECK(r.toposort().size() == 100000 + 2);
}

TEST_CASE("matchers compose with + in order") {
  PatternMatcher a({{UPat::cnst(1), [](const Match& m) { return m.root().const_like(2); }}});
  PatternMatcher b({{UPat::cnst(1), [](const Match& m) { return m.root().const_like(3); }}});
  UOp one = UOp::cnst_int(dtypes::index, 1);
  CHECK(graph_rewrite(one, a + b).const_int() == 2);
  CHECK(graph_rewrite(one, b + a).const_int() == 3);
}
