// Symbolic fuzz: random integer expressions (index, and int8 with wraparound) over random variables
// and ranges are simplified, then original and simplified are evaluated at random points inside the
// ranges by an evaluator written here (int64, C semantics, narrow ints wrapped; independent of
// exec_alu and the rules). Values must agree, and the simplified (and original) vmin/vmax must
// contain every sampled value. A simplified graph must also pass the verifier.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <map>
#include <random>
#include <unordered_map>

#include "uop/symbolic.h"
#include "uop/verify.h"

using namespace ugrad;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int kExpressions = 2000;  // the sanitizer build is ~10x slower
#else
constexpr int kExpressions = 10000;
#endif
constexpr int kPointsPerExpression = 24;

struct Env {
  std::map<std::string, int64_t> vars;
  std::map<int64_t, int64_t> ranges;  // axis -> value
};

// The reference evaluator: a direct reading of each op's C meaning.
int64_t eval(const UOp& root, const Env& env) {
  std::unordered_map<const UOpNode*, int64_t> val;
  for (const UOp& u : root.toposort()) {
    auto s = [&](size_t i) { return val.at(u.src(i).node()); };
    int64_t v = 0;
    switch (u.op()) {
      case Op::CONST:
        v = u.const_int();
        break;
      case Op::PARAM:
        v = env.vars.at(u.arg_as<ParamArg>().name);
        break;
      case Op::RANGE:
        v = env.ranges.at(u.arg_as<RangeArg>().axis);
        break;
      case Op::ADD:
        v = s(0) + s(1);
        break;
      case Op::SUB:
        v = s(0) - s(1);
        break;
      case Op::MUL:
        v = s(0) * s(1);
        break;
      case Op::NEG:
        v = -s(0);
        break;
      case Op::IDIV:
        REQUIRE(s(1) != 0);
        v = s(0) / s(1);  // C: truncates toward zero
        break;
      case Op::MOD:
        REQUIRE(s(1) != 0);
        v = s(0) % s(1);  // C: sign of the dividend
        break;
      case Op::MAX:
        v = std::max(s(0), s(1));
        break;
      case Op::CMPLT:
        v = s(0) < s(1);
        break;
      case Op::CMPNE:
        v = s(0) != s(1);
        break;
      case Op::CMPEQ:
        v = s(0) == s(1);
        break;
      case Op::AND:
        v = s(0) & s(1);
        break;
      case Op::OR:
        v = s(0) | s(1);
        break;
      case Op::XOR:
        v = s(0) ^ s(1);
        break;
      case Op::WHERE:
        v = s(0) ? s(1) : s(2);
        break;
      case Op::CAST:
        v = s(0);  // wrapped to the dtype below
        break;
      default:
        FAIL("the evaluator does not know ", op_name(u.op()));
    }
    // narrow integer results wrap (two's complement, as C++20 conversions do)
    if (u.dtype() == dtypes::int8) v = static_cast<int8_t>(v);
    if (u.dtype() == dtypes::int16) v = static_cast<int16_t>(v);
    if (u.dtype() == dtypes::int32) v = static_cast<int32_t>(v);
    val[u.node()] = v;
  }
  return val.at(root.node());
}

struct Leaf {
  UOp node;  // the PARAM or RANGE
  int64_t lo, hi;
  UOp value;  // node cast to the expression dtype
};

class Generator {
 public:
  // Expressions of `dtype`: index, or a narrow int whose leaves are casts of index variables.
  explicit Generator(uint64_t seed, DType dtype = dtypes::index) : rng_(seed), dtype_(dtype) {}

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // Fresh variables and ranges for one expression.
  void new_leaves() {
    leaves_.clear();
    const char* names[] = {"a", "b", "c"};
    for (const char* n : names) {
      int64_t lo = pick(0, 3) == 0 ? pick(-20, 0) : pick(0, 10);
      leaves_.push_back({UOp::variable(n, lo, lo + pick(0, 24)), 0, 0, {}});
    }
    for (int64_t axis = 0; axis < 2; ++axis) {
      int64_t end = pick(1, 16);
      leaves_.push_back({UOp::range(end, axis), 0, end - 1, {}});
    }
    for (Leaf& l : leaves_) {
      l.lo = l.node.vmin(), l.hi = l.node.vmax();
      l.value = l.node.cast(dtype_);
    }
  }

  UOp leaf() { return leaves_[size_t(pick(0, int64_t(leaves_.size()) - 1))].value; }

  UOp cnst(int64_t lo, int64_t hi) { return UOp::cnst_int(dtype_, pick(lo, hi)); }

  // Operands are generated in separate statements: argument evaluation order is unspecified, and
  // the expressions must be the same with every compiler.
  UOp expr(int depth) {
    if (depth == 0 || pick(0, 5) == 0) {
      if (pick(0, 4) == 0) return cnst(-8, 8);
      return leaf();
    }
    const int64_t kind = pick(0, 12);
    UOp a = expr(depth - 1);
    switch (kind) {
      case 0:
      case 1: {
        UOp b = expr(depth - 1);
        return a + b;
      }
      case 2:
        return a * cnst(-4, 8);
      case 3: {
        UOp b = expr(std::max(depth - 2, 0));
        return a * b;
      }
      case 4:
      case 5:
        return a.idiv(cnst(1, 12));
      case 6:
      case 7:
        return a % cnst(1, 12);
      case 8: {
        UOp b = expr(depth - 1);
        return a.max(b);
      }
      case 9: {
        UOp cond = pick(0, 1) ? a.lt(expr(depth - 1)) : a.lt(cnst(-10, 30));
        UOp b = expr(depth - 1);
        UOp c = expr(depth - 1);
        return cond.where(b, c);
      }
      case 10: {  // div/mod pairs that recombine: x%c + (x//c)*c, x%c + ((x//c)%d)*c
        UOp c = cnst(1, 6);
        UOp hi = a.idiv(c);
        if (pick(0, 1)) hi = hi % cnst(1, 5);
        return a % c + hi * c.const_int() * (pick(0, 3) ? 1 : 2);
      }
      case 11: {  // h*m*a + s by h*d, s often in [0, h): x // c -> y // (c/h), x % c -> ...
        const int64_t h = pick(2, 8), mul = pick(1, 3), d = pick(1, 4);
        UOp s = leaf();
        if (pick(0, 1)) s = s + cnst(-2, 4);
        UOp x = a * (h * mul) + s;
        return pick(0, 1) ? x.idiv(h * d) : x % (h * d);
      }
      default:
        return -a;
    }
  }

  Env point(bool corner) {
    Env env;
    for (const Leaf& l : leaves_) {
      int64_t v = corner ? (pick(0, 1) ? l.lo : l.hi) : pick(l.lo, l.hi);
      if (l.node.op() == Op::PARAM)
        env.vars[l.node.arg_as<ParamArg>().name] = v;
      else
        env.ranges[l.node.arg_as<RangeArg>().axis] = v;
    }
    return env;
  }

 private:
  std::mt19937_64 rng_;
  DType dtype_;
  std::vector<Leaf> leaves_;
};

std::string describe(const Env& env) {
  std::string out;
  for (const auto& [name, v] : env.vars) out += fmt::format("{}={} ", name, v);
  for (const auto& [axis, v] : env.ranges) out += fmt::format("r{}={} ", axis, v);
  return out;
}

}  // namespace

TEST_CASE("symbolic fuzz: simplified expressions evaluate like the originals, within vmin/vmax") {
  Generator gen(0x5eed2026);
  size_t nodes_before = 0, nodes_after = 0, points = 0, changed = 0;
  for (int i = 0; i < kExpressions; ++i) {
    gen.new_leaves();
    UOp e = gen.expr(5);
    if (i % 8 == 0) e = e.lt(gen.cnst(-10, 40));  // some comparisons at the root
    UOp s = simplify(e);
    verify(s);  // rules build well-typed graphs
    nodes_before += e.toposort().size();
    nodes_after += s.toposort().size();
    changed += !(s == e);
    for (int p = 0; p < kPointsPerExpression; ++p) {
      Env env = gen.point(p < 4);
      int64_t want = eval(e, env), got = eval(s, env);
      ++points;
      if (want != got || got < s.vmin() || got > s.vmax() || want < e.vmin() || want > e.vmax()) {
        std::string vars = describe(env);
        INFO("expression ", i, ": ", e.render());
        INFO("simplified: ", s.render());
        INFO("at ", vars, "original ", want, " in [", e.vmin(), ", ", e.vmax(), "], simplified ",
             got, " in [", s.vmin(), ", ", s.vmax(), "]");
        CHECK(want == got);
        CHECK(got >= s.vmin());
        CHECK(got <= s.vmax());
        CHECK(want >= e.vmin());
        CHECK(want <= e.vmax());
        return;
      }
    }
  }
  MESSAGE(kExpressions, " expressions, ", points, " points; ", changed, " simplified; nodes ",
          nodes_before, " -> ", nodes_after, " (",
          100.0 * double(nodes_before - nodes_after) / double(nodes_before), "% fewer)");
  CHECK(nodes_after < nodes_before);
}

TEST_CASE("symbolic fuzz: simplify_valid agrees with the original wherever the gate holds") {
  Generator gen(0x0a11d);
  int checked = 0, changed = 0;
  for (int i = 0; i < kExpressions / 4; ++i) {
    gen.new_leaves();
    UOp e = gen.expr(4);
    UOp g1 = gen.leaf();
    UOp g2 = gen.pick(0, 1) ? gen.leaf() : gen.expr(1);
    UOp c1 = gen.cnst(-5, 12);
    UOp c2 = gen.cnst(-5, 8);
    UOp gate = g1.lt(c1).alu(Op::AND, c2.lt(g2));
    UOp s = simplify_valid(simplify(e), gate);
    changed += !(s == simplify(e));
    for (int p = 0; p < kPointsPerExpression; ++p) {
      Env env = gen.point(p < 4);
      if (!eval(gate, env)) continue;
      ++checked;
      int64_t want = eval(e, env), got = eval(s, env);
      if (want != got) {
        INFO("expression: ", e.render(), " gate: ", gate.render());
        INFO("simplified: ", s.render(), " at ", describe(env));
        CHECK(want == got);
        return;
      }
    }
  }
  MESSAGE(int{kExpressions / 4}, " gated expressions, ", checked, " points inside their gates, ",
          changed, " changed by the gate");
  CHECK(checked > 0);
}

TEST_CASE("symbolic fuzz: int8 expressions wrap like C, and simplification keeps that") {
  Generator gen(0x1e8, dtypes::int8);
  size_t changed = 0;
  for (int i = 0; i < kExpressions / 4; ++i) {
    gen.new_leaves();
    UOp e = gen.expr(5);
    UOp s = simplify(e);
    verify(s);
    changed += !(s == e);
    for (int p = 0; p < kPointsPerExpression; ++p) {
      Env env = gen.point(p < 4);
      int64_t want = eval(e, env), got = eval(s, env);
      if (want != got || got < s.vmin() || got > s.vmax() || want < e.vmin() || want > e.vmax()) {
        INFO("expression ", i, ": ", e.render());
        INFO("simplified: ", s.render(), " at ", describe(env), "original ", want, " in [",
             e.vmin(), ", ", e.vmax(), "], simplified ", got, " in [", s.vmin(), ", ", s.vmax(),
             "]");
        CHECK(want == got);
        CHECK(got >= s.vmin());
        CHECK(got <= s.vmax());
        CHECK(want >= e.vmin());
        CHECK(want <= e.vmax());
        return;
      }
    }
  }
  MESSAGE(int{kExpressions / 4}, " int8 expressions, ", changed, " simplified");
}
