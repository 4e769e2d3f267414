// PatternMatcher: an ordered list of (UPat, callback) rules, bucketed by root op, composed with +.
// graph_rewrite applies one to a whole graph until nothing matches, with a step limit that turns a
// looping rule set into an error naming the op and the last rule.
#pragma once
#include <array>
#include <bitset>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "uop/upat.h"

namespace ugrad {

/// What a rule's callback sees: the matched root, the named bindings, and the rewrite's context.
class Match {
 public:
  Match(const UOp& root, void* ctx) : root_(root), ctx_(ctx) {}
  /// The UOp bound to `name`; an InternalError if the pattern has no such name.
  const UOp& operator[](std::string_view name) const;
  const UOp& root() const { return root_; }
  template <typename T>
  T& ctx() const {
    return *static_cast<T*>(ctx_);
  }

  // Used by the matcher.
  std::vector<std::pair<const std::string*, UOp>> binds;

 private:
  const UOp& root_;
  void* ctx_;
};

using RewriteFn = std::function<std::optional<UOp>(const Match&)>;

/// One rule. Its name (for errors and DEBUG) is where it was written. (The __builtin_ defaults
/// are the caller's location; std::source_location is missing from clang 14 with libstdc++ 12.)
struct Rule {
  Rule(UPat pat, RewriteFn fn, const char* file = __builtin_FILE(), int line = __builtin_LINE());
  UPat pat;
  RewriteFn fn;
  std::string name;
  std::bitset<128> required_child_ops;  // early reject: ops that must appear among the sources
};

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);  // NOLINT: a braced list of rules reads best
  /// The first rule that matches `u` and returns a replacement, or nullopt. `fired` gets the rule.
  std::optional<UOp> rewrite(const UOp& u, void* ctx = nullptr, const Rule** fired = nullptr) const;
  /// This matcher's rules followed by `other`'s.
  PatternMatcher operator+(const PatternMatcher& other) const;
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
  std::array<std::vector<uint32_t>, kNumOps> by_op_;  // rule indices per root op, in order
};

/// True if `pat` matches `u`; fills `m.binds`.
bool upat_match(const UPat& pat, const UOp& u, Match& m);

/// Rewrites the graph under `root` with `pm` to a fixed point. Default: sources first, then the
/// rebuilt node, and a replacement is itself rewritten again. bottom_up: the node first (to a
/// fixed point), then its sources. Throws Error past the REWRITE_LIMIT step limit.
UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr,
                  bool bottom_up = false);

}  // namespace ugrad
