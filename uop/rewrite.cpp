// graph_rewrite: an explicit-stack driver (no recursion), so graph depth never touches the C++
// stack.
#include <unordered_map>

#include "base/env.h"
#include "base/error.h"
#include "uop/pattern_matcher.h"

namespace ugrad {
namespace {

struct Frame {
  UOp node;
  int stage;  // 0: enter, 1: rebuild from rewritten sources, 2: take the result of `next`
  UOp next;   // stage 2: the replacement whose own rewrite is the answer
};

class Rewriter {
 public:
  Rewriter(const PatternMatcher& pm, void* ctx, bool bottom_up)
      : pm_(pm), ctx_(ctx), bottom_up_(bottom_up), limit_(knob_int(Knob::REWRITE_LIMIT)) {}

  UOp run(const UOp& root) {
    stack_.push_back({root, 0, {}});
    while (!stack_.empty()) {
      Frame f = std::move(stack_.back());
      stack_.pop_back();
      if (f.stage == 0)
        enter(f.node);
      else if (f.stage == 1)
        rebuild(f.node);
      else
        done_.emplace(f.node, done_.at(f.next));
    }
    return done_.at(root);
  }

 private:
  std::optional<UOp> apply(const UOp& u) {
    const Rule* fired = nullptr;
    std::optional<UOp> r = pm_.rewrite(u, ctx_, &fired);
    if (r) {
      last_rule_ = fired;
      if (++steps_ > limit_)
        fail(
            "graph_rewrite: more than {} rewrite steps, the rules are looping; last rule fired: {} "
            "({}) on {}",
            limit_, last_rule_->name, last_rule_->pat.str(), op_name(u.op()));
    }
    return r;
  }

  void enter(const UOp& u) {
    if (done_.count(u)) return;
    if (bottom_up_) {
      UOp x = u;
      while (std::optional<UOp> r = apply(x)) x = *r;
      if (!(x == u)) {
        stack_.push_back({u, 2, x});
        stack_.push_back({x, 0, {}});
        return;
      }
    }
    stack_.push_back({u, 1, {}});
    for (auto it = u.src().rbegin(); it != u.src().rend(); ++it)
      if (!done_.count(*it)) stack_.push_back({*it, 0, {}});
  }

  void rebuild(const UOp& u) {
    if (done_.count(u)) return;
    std::vector<UOp> src;
    src.reserve(u.src().size());
    for (const UOp& s : u.src()) src.push_back(done_.at(s));
    UOp x = u.replace_src(std::move(src));
    if (!bottom_up_) {
      if (std::optional<UOp> r = apply(x)) {
        stack_.push_back({u, 2, *r});
        stack_.push_back({*r, 0, {}});
        return;
      }
    }
    done_.emplace(u, x);
  }

  const PatternMatcher& pm_;
  void* ctx_;
  bool bottom_up_;
  int64_t limit_;
  int64_t steps_ = 0;
  const Rule* last_rule_ = nullptr;
  std::vector<Frame> stack_;
  // Keys hold references: a node that died could otherwise be reborn at the same address.
  std::unordered_map<UOp, UOp> done_;
};

}  // namespace

UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx, bool bottom_up) {
  return Rewriter(pm, ctx, bottom_up).run(root);
}

}  // namespace ugrad
