// Golden simplifications: index expressions and the exact text they simplify to.
#include <doctest/doctest.h>

#include "uop/symbolic.h"

using namespace ugrad;

namespace {

struct Golden {
  UOp expr;
  const char* want;
};

UOp c(int64_t v) { return UOp::cnst_int(dtypes::index, v); }

}  // namespace

TEST_CASE("golden simplifications") {
  UOp r0 = UOp::range(4, 0), r1 = UOp::range(4, 1), r2 = UOp::range(8, 2), r3 = UOp::range(16, 3);
  UOp x = UOp::variable("x", 0, 100), y = UOp::variable("y", 0, 3), z = UOp::variable("z", 0, 7);
  UOp n = UOp::variable("n", -10, 10), m = UOp::variable("m", 1, 8);
  UOp rn = UOp::range(m, 4);
  const Golden table[] = {
      // div/mod of a linear index by its inner extent
      {(r0 * 4 + r1).idiv(4), "r0"},
      {(r0 * 4 + r1) % 4, "r1"},
      {(r1 + r0 * 4).idiv(4), "r0"},
      {(r0 * 32 + r2 * 4 + r1).idiv(4) % 8, "r2"},
      {(r0 * 32 + r2 * 4 + r1).idiv(32), "r0"},
      {(r0 * 32 + r2 * 4 + r1) % 32, "((r2*4)+r1)"},
      {((x * 8 + y).idiv(4)) % 2, "0"},
      {((x * 8 + z).idiv(4)) % 2, "(z//4)"},
      {((x * 8 + z).idiv(4)), "((x*2)+(z//4))"},
      {(x * 4 + y).idiv(4) * 4 + (x * 4 + y) % 4, "((x*4)+y)"},
      {x % 4 + (x.idiv(4) % 8) * 4, "(x%32)"},
      {n % 4 + (n.idiv(4) % 2) * 4, "(n%8)"},
      {(n % 3) * 2 + n.idiv(3) * 6, "(n*2)"},
      // constants split off a non-negative dividend
      {(x + 3).idiv(3), "((x//3)+1)"},
      {(x + 3) % 3, "(x%3)"},
      {(x * 2 + 1).idiv(2), "x"},
      {(x * 2 + 1) % 2, "1"},
      {(x * 4 + 5) % 8, "((((x+1)%2)*4)+1)"},
      {(x * 4 + 3).idiv(8), "(x//2)"},
      // gcd factoring
      {(x * 6).idiv(3), "(x*2)"},
      {(x * 4 + y * 2).idiv(2), "((x*2)+y)"},
      {(x * 6 + 4) % 4, "((x%2)*2)"},
      {(n * 3).idiv(3), "n"},
      {(n * 6 + 3) % 3, "0"},
      // trivial divisors, ranges
      {x % 1, "0"},
      {x.idiv(1), "x"},
      {r2 % 8, "r2"},
      {r2.idiv(8), "0"},
      {r3 % 32, "r3"},
      {rn % m, "r4"},
      {rn.idiv(m), "0"},
      {y % 4, "y"},
      {n.idiv(11), "0"},
      // negative dividends keep C semantics: nothing to fold
      {n.idiv(3), "(n//3)"},
      {n % 3, "(n%3)"},
      {n.idiv(-3), "((n//3)*-1)"},
      {x % -7, "(x%7)"},
      // nested div/mod
      {(x % 16) % 4, "(x%4)"},
      {x.idiv(2).idiv(3), "(x//6)"},
      {(x % 12).idiv(4), "((x//4)%3)"},
      // comparisons
      {(r0 * 4 + r1).lt(16), "True"},
      {(r0 * 4 + r1).lt(15), "(((r0*4)+r1)<15)"},
      {(r0 * 4 + r1).lt(0), "False"},
      {(x + 1).lt(5), "(x<4)"},
      {(x * 3).lt(10), "(x<4)"},
      {c(5).lt(x * 2), "(2<x)"},
      {x.idiv(4).lt(3), "(x<12)"},
      {(x * -1).lt(-5), "(5<x)"},
      {(x * 2).ne(c(7)), "True"},
      {(x * 2 + 2).eq(c(8)), "(x==3)"},
      {x.lt(x), "False"},
      {(x + 3).lt(x + 5), "True"},
      {(x * 2 + y).lt(x + 4), "((x+y)<4)"},
      {r0.ne(r0 + 1), "True"},
      {(x + y * 2).eq(y + 7), "((x+y)==7)"},
      // identities, like terms, canonical constants
      {x + x, "(x*2)"},
      {x * 3 + x * 2, "(x*5)"},
      {x - x, "0"},
      {(x + 3) + 4, "(x+7)"},
      {(3 + x) * 2, "((x*2)+6)"},
      {(x + y) * 4 - x * 4, "(y*4)"},
      {-(-x), "x"},
      {x * 0 + y * 1, "y"},
      {(x * 2) * 3, "(x*6)"},
      {x.max(y + 200), "(y+200)"},
      {y.max(x + 4), "(x+4)"},
      {x.max(x), "x"},
      {x.lt(5).where(y, y), "y"},
      {c(1).lt(c(2)).where(x, y), "x"},
  };
  for (const Golden& g : table) {
    INFO("expression: ", g.expr.render());
    CHECK(simplify(g.expr).render() == g.want);
  }
  CHECK(sizeof(table) / sizeof(table[0]) >= 30);
}
