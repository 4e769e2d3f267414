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
#include <unordered_set>

#include "base/env.h"
#include "base/error.h"
#include "schedule/custom_kernel.h"
#include "schedule/kernel_walk.h"

namespace ugrad {

namespace {

// The device of every node. A node is where the buffers it reads are (the first source that has
// a device decides; a COPY is on its target, an ASSIGN where its target buffer is). A graph of
// constants names no device, so it takes the device of the nodes that read it: a buffer holding
// one lives where the kernel reading it runs, whatever the default device is. Only a root that
// is itself all constants, read by nothing, is on the default device (Tensor::realize_all gives
// such a root a buffer of the tensor's own device first).
std::unordered_map<UOp, std::string> node_devices(const std::vector<UOp>& topo,
                                                  const std::vector<UOp>& roots) {
  std::unordered_map<UOp, std::string> device;
  for (const UOp& u : topo) {  // sources first: where each node's buffers are
    std::string d;
    if (u.op() == Op::BUFFER) d = u.arg_as<BufferArg>().device;
    if (u.op() == Op::COPY) d = u.arg_as<std::string>();
    if (u.op() == Op::ASSIGN) d = base_buffer(u.src(0)).arg_as<BufferArg>().device;
    for (size_t i = 0; d.empty() && i < u.src().size(); ++i)
      if (auto s = device.find(u.src(i)); s != device.end()) d = s->second;
    if (!d.empty()) device.emplace(u, std::move(d));
  }
  for (const UOp& r : roots) device.try_emplace(r, knob_str(Knob::DEV));
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {  // readers first: constants
    auto d = device.find(*it);
    if (d == device.end()) continue;
    for (const UOp& s : it->src()) device.try_emplace(s, d->second);
  }
  return device;
}

// Kernels the scheduler does not build from the graph: a copy, a hand-written kernel.
bool is_opaque_kernel(const UOp& u) { return u.op() == Op::COPY || u.op() == Op::KERNEL; }

// The kernels in an order that runs each after the kernels whose outputs it reads and each
// ASSIGN after every other kernel that reads the buffer it overwrites (write after read: a read
// of a buffer, not of its assignment, sees the value from before the assignment), and otherwise
// in graph order. A kernel that needs a buffer's value both before and after its assignment is
// an Error.
std::vector<UOp> order_kernels(const BufferPlan& plan,
                               const std::unordered_map<UOp, size_t>& position) {
  const size_t n = plan.kernels.size();
  std::unordered_map<UOp, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(plan.kernels[i], i);
  std::vector<std::vector<size_t>> after(n);  // after[i]: kernels that must run after kernel i
  std::vector<size_t> waiting(n, 0);
  const auto edge = [&](size_t from, size_t to) {
    after[from].push_back(to);
    ++waiting[to];
  };
  std::unordered_map<UOp, std::vector<size_t>> readers;  // realized buffer -> kernels reading it
  for (size_t k = 0; k < n; ++k) {
    const UOp& kernel = plan.kernels[k];
    std::vector<UOp> stack;
    if (kernel.op() == Op::ASSIGN)
      stack.push_back(kernel.src(1));  // src(0) is where it writes
    else
      stack.assign(kernel.src().begin(), kernel.src().end());
    std::unordered_set<UOp> seen;
    while (!stack.empty()) {
      UOp u = stack.back();
      stack.pop_back();
      if (!seen.insert(u).second) continue;
      if (plan.buffers.count(u)) {  // made in this schedule: read after its kernel
        const UOp& maker = is_kernel_output(u) ? u.src(1) : u;
        if (auto it = index.find(maker); it != index.end() && it->second != k) edge(it->second, k);
        continue;
      }
      if (u.op() == Op::BUFFER) readers[u].push_back(k);
      stack.insert(stack.end(), u.src().begin(), u.src().end());
    }
  }
  for (size_t a = 0; a < n; ++a)
    if (plan.kernels[a].op() == Op::ASSIGN)
      if (auto r = readers.find(base_buffer(plan.kernels[a].src(0))); r != readers.end())
        for (size_t k : r->second)
          if (k != a) edge(k, a);
  // Kahn's algorithm, graph order among the kernels that are ready.
  std::map<size_t, size_t> ready;  // position -> kernel
  for (size_t k = 0; k < n; ++k)
    if (waiting[k] == 0) ready.emplace(position.at(plan.kernels[k]), k);
  std::vector<UOp> out;
  while (!ready.empty()) {
    const size_t k = ready.begin()->second;
    ready.erase(ready.begin());
    out.push_back(plan.kernels[k]);
    for (size_t next : after[k])
      if (--waiting[next] == 0) ready.emplace(position.at(plan.kernels[next]), next);
  }
  if (out.size() != n)
    fail(
        "schedule: a kernel reads a buffer both before and after an assignment to it in the "
        "same schedule (read the assignment, or realize the two apart)");
  return out;
}

}  // namespace

BufferPlan decide_buffers(const std::vector<UOp>& roots) {
  UOp sink = UOp::make(Op::SINK, dtypes::void_, roots);
  std::vector<UOp> topo = sink.toposort();
  std::unordered_map<UOp, size_t> position;
  for (size_t i = 0; i < topo.size(); ++i) position.emplace(topo[i], i);

  const std::unordered_map<UOp, std::string> device = node_devices(topo, roots);
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
      plan.buffers.emplace(u, buffer_node(device.at(u), u.dtype(), count));
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
  plan.kernels = order_kernels(plan, position);
  return plan;
}

}  // namespace ugrad
