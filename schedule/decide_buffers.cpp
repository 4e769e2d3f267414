// Stage 1 of the scheduler: which nodes get a buffer. Explicit rules first: CONTIGUOUS, ASSIGN,
// COPY (and the source it copies), and the roots that are not already realized views. Then the
// reduce rules (kernel_walk.cpp): each kernel is walked over the contexts its builder will use;
// a reduce whose loop would be recomputed per iteration or nested in another reduce's loop, or a
// node holding a reduce needed in two contexts, gets a buffer, and the kernel is walked again.
// Kernels are walked last first: a new buffer is an input of the kernel that asked for it, so it
// is walked after it. A new buffer only cuts paths from the kernels walked before: the contexts
// they reach become fewer, never new, so no rule they passed can break. That is the fixed point.
// Last, a reduce that two kernels would each compute inline gets a buffer, to a fixed point too.
#include "schedule/kernelize.h"

#include <algorithm>
#include <map>

#include "base/env.h"
#include "schedule/kernel_walk.h"

namespace ugrad {

namespace {

// The device of a graph: that of its buffers, or where its last COPY went (the default device for
// a graph of constants).
std::string device_of(const UOp& u) {
  UOp b = u;
  while (b.op() != Op::BUFFER && b.op() != Op::COPY && !b.src().empty()) b = b.src(0);
  if (b.op() == Op::COPY) return b.arg_as<std::string>();
  if (b.op() == Op::BUFFER) return b.arg_as<BufferArg>().device;
  for (const UOp& x : u.toposort())
    if (x.op() == Op::BUFFER) return x.arg_as<BufferArg>().device;
  return knob_str(Knob::DEV);
}

}  // namespace

BufferPlan decide_buffers(const std::vector<UOp>& roots) {
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  std::vector<UOp> topo = sink.toposort();
  std::unordered_map<UOp, size_t> position;
  for (size_t i = 0; i < topo.size(); ++i) position.emplace(topo[i], i);

  BufferPlan plan;
  std::map<size_t, UOp> pending;  // by topological position; walked last first
  auto materialize = [&](const UOp& u) {
    if (plan.buffers.count(u)) return;
    if (u.op() == Op::ASSIGN) {
      UOp b = u.src(0);
      while (b.op() != Op::BUFFER) b = b.src(0);
      plan.buffers.emplace(u, b);
    } else {
      int64_t count = 1;
      for (int64_t d : max_dims(shape_of(u))) count *= d;
      plan.buffers.emplace(u, buffer_node(device_of(u), u.dtype(), count));
    }
    pending.emplace(position.at(u), u);
  };
  for (const UOp& u : topo) {
    if (u.op() == Op::CONTIGUOUS || u.op() == Op::ASSIGN) materialize(u);
    // a copy moves a whole buffer: its source is realized first on its own device
    if (u.op() == Op::COPY) {
      materialize(u);
      if (!is_realized_view(u.src(0))) materialize(u.src(0));
    }
  }
  for (const UOp& r : roots)
    if (!is_realized_view(r)) materialize(r);

  auto walk_pending = [&] {
    while (!pending.empty()) {
      auto last = std::prev(pending.end());
      UOp node = last->second;
      if (node.op() != Op::COPY) {
        if (UOp need = KernelWalk(node, plan.buffers).first_needed_buffer()) {
          materialize(need);
          continue;
        }
      }
      plan.kernels.push_back(node);
      pending.erase(last);
    }
  };
  walk_pending();
  // A reduce that two kernels would each compute gets a buffer: computed once, loaded by both.
  // New buffers only remove what kernels compute, so this ends too.
  for (bool added = true; added;) {
    std::unordered_map<UOp, int> kernels_computing;
    for (const UOp& k : plan.kernels) {
      if (k.op() == Op::COPY) continue;
      KernelWalk walk(k, plan.buffers);
      walk.first_needed_buffer();
      for (const UOp& r : walk.inline_reduces()) ++kernels_computing[r];
    }
    added = false;
    for (const UOp& u : topo)
      if (auto it = kernels_computing.find(u); it != kernels_computing.end() && it->second > 1)
        materialize(u), added = true;
    walk_pending();
  }
  // Dependency order: every input of a kernel comes before it in the graph.
  std::sort(plan.kernels.begin(), plan.kernels.end(),
            [&](const UOp& a, const UOp& b) { return position.at(a) < position.at(b); });
  return plan;
}

}  // namespace ugrad
