// Private to schedule/: the walk both scheduler stages share. A kernel's value is computed by
// walking its graph from the output inwards, each node in a context (the index of each of its
// axes, in loop ranges); movement ops only change the context. Stage 1 (decide_buffers) walks a
// kernel to find the nodes the reduce rules say need a buffer; stage 2 (build_kernels) walks it
// again, over the same contexts in the same order, building the AST.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace ugrad {

// Where a value is computed: the index of each axis of its shape, the ranges in scope, and a gate
// (empty = always valid).
struct Ctx {
  std::vector<UOp> idx;
  std::vector<UOp> scope;
  UOp valid;
};

/// A (node, context) pair as a map key: the nodes themselves, so that the key keeps them alive
/// (a key of their addresses matched a later, different index expression that reused the
/// address of a freed one, and the walk returned the value it had stored for the old one).
struct CtxKey {
  CtxKey(const UOp& node, const Ctx& c);
  std::vector<UOp> nodes;  // the node, the indices, an empty UOp, the scope, an empty UOp, valid
  bool operator==(const CtxKey&) const = default;
  struct Hash {
    size_t operator()(const CtxKey& k) const;
  };
};

class KernelWalk {
 public:
  using Sources = std::vector<std::pair<UOp, Ctx>>;  // (source, its context)

  /// The walk of the kernel that computes `out`, reading the nodes of `buffers` (node -> BUFFER)
  /// other than `out` from their buffers.
  KernelWalk(const UOp& out, const std::unordered_map<UOp, UOp>& buffers)
      : out_(out), buffers_(buffers) {}

  /// The context of the output: a loop range per axis that is not of size 1.
  Ctx output_ctx();
  /// The context of a movement op's source, given the op's own context.
  Ctx src_ctx(const UOp& u, const Ctx& c) const;
  /// True when the kernel reads `u` from its buffer instead of computing it.
  bool is_load(const UOp& u) const { return !(u == out_) && buffers_.count(u); }
  /// The first node the reduce rules say needs a buffer for this kernel to be built, or an empty
  /// UOp: walks what the kernel computes, as the builder will.
  UOp first_needed_buffer();

  /// Visits each (node, context) `root` needs in `rc` once, sources first, storing
  /// value(node, ctx, sources) (sources: its (source, context) pairs, loads included). Stops at a
  /// node that breaks a reduce rule and returns the node that needs a buffer; else an empty UOp.
  template <class Value>
  UOp walk(const UOp& root, const Ctx& rc, Value value);
  /// The value walk() stored for `node` in `c`.
  const UOp& value_at(const UOp& node, const Ctx& c) const;
  /// The reduce ranges a REDUCE_AXIS evaluated in `c` opened.
  const std::vector<UOp>& reduce_ranges(const UOp& red, const Ctx& c) const;
  /// The reduces (REDUCE_AXIS, one-hot sums aside) the walk so far computes inline, the output
  /// aside.
  const std::vector<UOp>& inline_reduces() const { return inline_reduces_; }

 private:
  UOp needs_buffer(const UOp& u, const Ctx& c, const CtxKey& key);
  Sources sources(const UOp& u, const Ctx& c);
  bool has_reduce(const UOp& node);

  UOp out_;
  const std::unordered_map<UOp, UOp>& buffers_;
  std::unordered_map<CtxKey, UOp, CtxKey::Hash> values_;
  std::unordered_map<UOp, CtxKey> reduce_ctx_;  // node -> its one context
  std::unordered_map<UOp, bool> has_reduce_;
  std::unordered_map<CtxKey, std::vector<UOp>, CtxKey::Hash> reduce_ranges_;
  std::vector<UOp> inline_reduces_;
  int64_t next_axis_ = 0;
};

// An explicit stack, not recursion: model graphs are deep.
template <class Value>
UOp KernelWalk::walk(const UOp& root, const Ctx& rc, Value value) {
  struct Item {
    UOp node;
    Ctx ctx;
    CtxKey key;
    bool expanded = false;
    Sources srcs;
  };
  std::vector<Item> stack;
  stack.push_back({root, rc, CtxKey(root, rc), false, {}});
  while (!stack.empty()) {
    Item& it = stack.back();
    if (values_.count(it.key)) {
      stack.pop_back();
      continue;
    }
    if (!it.expanded) {
      it.expanded = true;
      if (UOp need = needs_buffer(it.node, it.ctx, it.key)) return need;
      it.srcs = sources(it.node, it.ctx);
      std::vector<Item> push;
      for (auto& [s, sc] : it.srcs) {
        if (is_load(s)) continue;
        CtxKey k(s, sc);
        if (!values_.count(k)) push.push_back({s, sc, std::move(k), false, {}});
      }
      for (auto& p : push) stack.push_back(std::move(p));
      continue;
    }
    UOp v = value(it.node, it.ctx, it.srcs);
    values_.emplace(std::move(it.key), v);
    stack.pop_back();
  }
  return {};
}

}  // namespace ugrad
