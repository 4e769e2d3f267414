// Stage 1 of the scheduler: which nodes get a buffer. Explicit rules first: CONTIGUOUS, ASSIGN,
// COPY (and the source it copies), a hand-written KERNEL (its buffers are materialized, what it
// writes is read from them), and the roots that are not already realized views. Then the
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
#include "schedule/custom_kernel.h"
#include "schedule/kernel_walk.h"

namespace ugrad {

namespace {

// The device each node's readers run on, for graphs of constants, which name none: a buffer
// holding one lives where the kernel reading it runs (not on the default device).
std::unordered_map<UOp, std::string> reader_devices(const std::vector<UOp>& topo) {
  std::unordered_map<UOp, std::string> reader;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const UOp& u = *it;
    if (u.op() == Op::COPY) continue;  // its source lives on the source's device
    std::string d;
    if (u.op() == Op::BUFFER) d = u.arg_as<BufferArg>().device;
    if (u.op() == Op::ASSIGN) d = base_buffer(u.src(0)).arg_as<BufferArg>().device;
    if (auto r = reader.find(u); d.empty() && r != reader.end()) d = r->second;
    if (d.empty()) continue;
    for (const UOp& s : u.src()) reader.try_emplace(s, d);
  }
  return reader;
}

// The device of a graph: that of its buffers, or where its last COPY went; for a graph of
// constants, that of its readers (the default device when it has none).
std::string device_of(const UOp& u, const std::unordered_map<UOp, std::string>& reader) {
  UOp b = u;
  while (b.op() != Op::BUFFER && b.op() != Op::COPY && !b.src().empty()) b = b.src(0);
  if (b.op() == Op::COPY) return b.arg_as<std::string>();
  if (b.op() == Op::BUFFER) return b.arg_as<BufferArg>().device;
  for (const UOp& x : u.toposort())
    if (x.op() == Op::BUFFER) return x.arg_as<BufferArg>().device;
  if (auto r = reader.find(u); r != reader.end()) return r->second;
  return knob_str(Knob::DEV);
}

// Kernels the scheduler does not build from the graph: a copy, a hand-written kernel.
bool is_opaque_kernel(const UOp& u) { return u.op() == Op::COPY || u.op() == Op::KERNEL; }

}  // namespace

BufferPlan decide_buffers(const std::vector<UOp>& roots) {
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  std::vector<UOp> topo = sink.toposort();
  std::unordered_map<UOp, size_t> position;
  for (size_t i = 0; i < topo.size(); ++i) position.emplace(topo[i], i);

  const std::unordered_map<UOp, std::string> reader = reader_devices(topo);
  BufferPlan plan;
  std::map<size_t, UOp> pending;  // by topological position; walked last first
  auto materialize = [&](const UOp& u) {
    if (plan.buffers.count(u)) return;
    if (u.op() == Op::ASSIGN || is_kernel_output(u)) {
      plan.buffers.emplace(u, base_buffer(u.src(0)));
      if (is_kernel_output(u)) return;  // its KERNEL writes it
    } else {
      int64_t count = 1;
      for (int64_t d : max_dims(shape_of(u))) count *= d;
      plan.buffers.emplace(u, buffer_node(device_of(u, reader), u.dtype(), count));
    }
    pending.emplace(position.at(u), u);
  };
  for (const UOp& u : topo) {
    if (u.op() == Op::CONTIGUOUS || u.op() == Op::ASSIGN || is_kernel_output(u)) materialize(u);
    // a copy moves a whole buffer: its source is realized first on its own device
    if (u.op() == Op::COPY) {
      materialize(u);
      if (!is_realized_view(u.src(0))) materialize(u.src(0));
    }
    // a hand-written kernel reads and writes whole buffers: nothing fuses across it
    if (u.op() == Op::KERNEL) {
      pending.emplace(position.at(u), u);
      for (const UOp& s : u.src())
        if (s.op() != Op::PARAM && !is_realized_view(s)) materialize(s);
    }
  }
  for (const UOp& r : roots)
    if (!is_realized_view(r)) materialize(r);

  auto walk_pending = [&] {
    while (!pending.empty()) {
      auto last = std::prev(pending.end());
      UOp node = last->second;
      if (!is_opaque_kernel(node)) {
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
      if (is_opaque_kernel(k)) continue;
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
