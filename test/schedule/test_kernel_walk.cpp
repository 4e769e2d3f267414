// The scheduler's walk memoizes values by (node, context). Its keys hold the context's nodes: a
// key of their addresses once matched a later index expression that reused the address of a
// freed one, and a Q6_K GEMM kernel read x's word 10 where it needed word 9 (in about one run
// in ten, as the heap's layout fell).
#include <doctest/doctest.h>

#include "schedule/kernel_walk.h"

using namespace ugrad;

TEST_CASE("a walk's context key holds its nodes: a freed index cannot alias a new one") {
  const UOp node = UOp::variable("walk_node", 0, 10);
  const size_t before = live_uop_count();
  auto index = [](int64_t offset) { return UOp::variable("walk_index", 0, 100) + offset; };
  auto key_for = [&](const UOp& idx, const UOp& scope) {
    Ctx c;
    c.idx.push_back(idx);
    c.scope.push_back(scope);
    return CtxKey(node, c);
  };
  const CtxKey key = key_for(index(72), UOp::variable("walk_range", 0, 4));
  // Nothing but the key refers to the index and the range now; both stay alive.
  CHECK(live_uop_count() > before);
  const CtxKey same = key_for(index(72), UOp::variable("walk_range", 0, 4));
  CHECK(same == key);
  CHECK(CtxKey::Hash()(same) == CtxKey::Hash()(key));
  CHECK_FALSE(key_for(index(80), UOp::variable("walk_range", 0, 4)) == key);
  // An index in the scope's place is another context.
  CHECK_FALSE(key_for(UOp::variable("walk_range", 0, 4), index(72)) == key);
}
