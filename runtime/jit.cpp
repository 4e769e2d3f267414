#include "runtime/jit.h"

#include <fmt/format.h>

#include <chrono>

#include "runtime/realize.h"
#include "schedule/memory_plan.h"

#include <unordered_map>
#include <unordered_set>
#include "base/env.h"
#include "base/error.h"

namespace ugrad {
namespace {
thread_local CaptureScope* g_capture = nullptr;
}

CaptureScope::CaptureScope(bool run) : run(run) {
  if (g_capture) fail("JIT: a capture is already running on this thread (nested JITs)");
  g_capture = this;
}
CaptureScope::~CaptureScope() { g_capture = nullptr; }
CaptureScope* CaptureScope::current() { return g_capture; }

JitStats& jit_stats() {
  static JitStats stats;
  return stats;
}

void print_kernel_line(const Device& device, std::string_view label, const KernelSource& src,
                       double seconds, const VarVals& vars) {
  if (!device.runs_kernels()) {
    fmt::print(stderr, "{:<6} {:<28} compiled, not run ({} runs nothing: no time)  {}\n", label,
               src.name, device.name(), src.opts_desc);
    return;
  }
  const double f = src.flops ? launch_estimate(src.flops, vars) : 0;
  const double b = src.bytes ? launch_estimate(src.bytes, vars) : 0;
  fmt::print(stderr, "{:<6} {:<28} {:>9.3f} ms  {:>8.2f} GFLOP/s  {:>8.2f} GB/s  {}\n", label,
             src.name, seconds * 1e3, f / seconds * 1e-9, b / seconds * 1e-9, src.opts_desc);
}

bool ExecItem::writes(size_t slot) const {
  return program ? program->source().buffers.at(slot).written : slot == 0;
}

Device& ExecItem::copy_source() const {
  return get_device(buffers.at(1).arg_as<BufferArg>().device);
}

size_t ExecItem::copy_bytes() const {
  auto bytes = [](const UOp& b) {
    return size_t(b.arg_as<BufferArg>().size) * itemsize(b.dtype());
  };
  return std::min(bytes(buffers.at(0)), bytes(buffers.at(1)));
}

void print_copy_line(const std::string& device, size_t bytes, const std::string& from,
                     double seconds) {
  fmt::print(stderr, "{:<6} {:<28} {:>9.3f} ms  {:>8.2f} GB/s  from {}\n", device,
             fmt::format("copy {} bytes", bytes), seconds * 1e3, double(bytes) / seconds * 1e-9,
             from);
}

void run_exec_item(const ExecItem& item, const VarVals& var_vals) {
  if (!item.program)
    return copy_between_devices(*item.device, buffer_of(item.buffers[0])->handle(),
                                item.copy_source(), buffer_of(item.buffers[1])->handle(),
                                item.copy_bytes());
  const KernelSource& src = item.program->source();
  std::vector<void*> handles;
  handles.reserve(item.buffers.size());
  for (const UOp& b : item.buffers) handles.push_back(buffer_of(b)->handle());
  std::vector<int64_t> vals;
  vals.reserve(src.vars.size());
  for (const UOp& v : src.vars) {
    const ParamArg& p = v.arg_as<ParamArg>();
    auto it = std::find_if(var_vals.begin(), var_vals.end(),
                           [&](auto& kv) { return kv.first == p.name; });
    if (it == var_vals.end()) fail("kernel {}: variable '{}' is not bound", src.name, p.name);
    if (it->second < p.lo || it->second > p.hi)
      fail("variable '{}' = {} is outside its range [{}, {}]", p.name, it->second, p.lo, p.hi);
    vals.push_back(it->second);
  }
  item.device->launch(*item.program, handles, vals);
}

GraphJit::GraphJit(Fn fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {}

namespace {

bool same_input(const UOp& a, const UOp& b) {
  if (a.op() == Op::PARAM || b.op() == Op::PARAM) return a == b;
  const Shape &sa = shape_of(a), &sb = shape_of(b);
  bool same = a.dtype() == b.dtype() && sa.size() == sb.size();
  for (size_t j = 0; same && j < sa.size(); ++j) same = dims_equal(sa[j], sb[j]);
  return same;
}

// What must match between the capture's inputs and a replay's: a variable, or a view's dtype
// and (unbound) shape.
UOp signature_of(const UOp& in) {
  return is_bound_variable(in) ? in.src(0) : unbind_variables({in}).first[0];
}

std::string input_str(const UOp& in) {
  if (in.op() == Op::PARAM) return fmt::format("variable '{}'", in.arg_as<ParamArg>().name);
  return fmt::format("{} {}", to_string(in.dtype()), shape_str(shape_of(in)));
}

}  // namespace

std::pair<std::vector<UOp>, VarVals> GraphJit::read_inputs(const std::vector<UOp>& inputs) const {
  std::vector<UOp> in_bufs;
  VarVals vals;
  for (const UOp& in : inputs) {
    if (is_bound_variable(in)) {
      auto [var, value] = unbind_variable(in);
      vals.emplace_back(var.arg_as<ParamArg>().name, value);
      in_bufs.emplace_back();
      continue;
    }
    UOp b = realized_buffer(in);
    if (!b) fail("{}: inputs must be realized tensors or bound variables", name_);
    in_bufs.push_back(b);
  }
  if (calls_ < 2 || knob_int(Knob::JIT) == 0) return {in_bufs, vals};  // nothing captured yet
  if (inputs.size() != signature_.size())
    fail("{}: called with {} inputs, captured with {}", name_, inputs.size(), signature_.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const UOp in = signature_of(inputs[i]);
    if (!same_input(in, signature_[i]))
      fail("{}: input {} is {}, but the JIT captured {}", name_, i, input_str(in),
           input_str(signature_[i]));
  }
  return {in_bufs, vals};
}

std::vector<UOp> GraphJit::operator()(const std::vector<UOp>& inputs) {
  const auto read = read_inputs(inputs);
  const std::vector<UOp>& in_bufs = read.first;
  const VarVals& vars = read.second;
  int64_t call = calls_++;
  if (call == 0 || knob_int(Knob::JIT) == 0) return realize(fn_(inputs));
  if (call == 1) return capture(inputs, in_bufs, vars, true);
  replay(in_bufs, vars);
  std::vector<UOp> outs;
  for (const UOp& o : outputs_) outs.push_back(rebind_variables(o, vars));
  return outs;
}

std::vector<UOp> GraphJit::capture(const std::vector<UOp>& inputs, const std::vector<UOp>& in_bufs,
                                   const VarVals& vars, bool run) {
  std::vector<UOp> outs;
  std::vector<ExecItem> captured;
  const int64_t first_new_buffer = next_buffer_id();
  {
    CaptureScope capture(run);
    outs = realize(fn_(inputs));
    captured = std::move(capture.items);
  }
  for (const ExecItem& item : captured) {
    if (!item.program) continue;
    for (const UOp& v : item.program->source().vars)
      if (std::none_of(vars.begin(), vars.end(),
                       [&](auto& kv) { return kv.first == v.arg_as<ParamArg>().name; }))
        fail("{}: kernel {} reads variable '{}', which is not an input; pass it bound as one",
             name_, item.program->source().name, v.arg_as<ParamArg>().name);
  }
  plan_launches(captured, outs, in_bufs, first_new_buffer);
  signature_.clear();
  for (const UOp& in : inputs) signature_.push_back(signature_of(in));
  outputs_ = unbind_variables(outs).first;
  if (debug_level() >= 1)
    fmt::print(stderr, "{}: captured {} kernels with {} inputs\n", name_, launches_.size(),
               inputs.size());
  return outs;
}

void GraphJit::capture_without_running(const std::vector<UOp>& inputs) {
  if (calls_ > 0 || knob_int(Knob::JIT) == 0) return;
  const auto [in_bufs, vars] = read_inputs(inputs);
  capture(inputs, in_bufs, vars, false);
  calls_ = 2;
}

// Turns the captured launches into replayable ones. Buffers the capture created for itself
// (not outputs, first touched by a kernel that writes them) share one arena planned by lifetime.
void GraphJit::plan_launches(const std::vector<ExecItem>& captured, const std::vector<UOp>& outs,
                             const std::vector<UOp>& in_bufs, int64_t first_new_buffer) {
  std::unordered_set<UOp> outputs;
  for (const UOp& o : outs) outputs.insert(realized_buffer(o));
  std::unordered_map<UOp, size_t> planned;  // buffer -> index into lifetimes
  std::vector<UOp> planned_order;
  std::vector<BufferLifetime> lifetimes;
  std::unordered_set<UOp> seen;
  for (size_t step = 0; step < captured.size(); ++step) {
    const ExecItem& item = captured[step];
    for (size_t slot = 0; slot < item.buffers.size(); ++slot) {
      const UOp& b = item.buffers[slot];
      bool first_touch = seen.insert(b).second;
      const BufferArg& a = b.arg_as<BufferArg>();
      // the arena lives on one device: that of the first buffer planned
      const std::string& arena_device =
          planned_order.empty() ? a.device : planned_order[0].arg_as<BufferArg>().device;
      bool fresh = a.id >= first_new_buffer && !outputs.count(b) && a.device == arena_device;
      if (first_touch && fresh && item.writes(slot)) {
        planned.emplace(b, lifetimes.size());
        planned_order.push_back(b);
        size_t bytes = static_cast<size_t>(a.size) * itemsize(b.dtype());
        lifetimes.push_back({bytes, 64, static_cast<int64_t>(step), static_cast<int64_t>(step)});
      } else if (auto it = planned.find(b); it != planned.end()) {
        lifetimes[it->second].last_step = static_cast<int64_t>(step);
      }
    }
  }
  std::vector<BufferRef> views(planned_order.size());
  if (!planned_order.empty()) {
    MemoryPlan plan = plan_memory(lifetimes);
    const std::string& device = planned_order[0].arg_as<BufferArg>().device;
    BufferRef arena =
        Buffer::make(device, std::max<size_t>(plan.arena_size, 1), get_device(device).allocator());
    for (size_t i = 0; i < planned_order.size(); ++i)
      views[i] = Buffer::view(arena, plan.offsets[i], lifetimes[i].size);
    arena_bytes_ = plan.arena_size;
    separate_bytes_ = 0;
    for (const BufferLifetime& l : lifetimes) separate_bytes_ += l.size;
    if (debug_level() >= 1)
      fmt::print(stderr, "{}: {} intermediate buffers planned into {} bytes (separately {})\n",
                 name_, planned_order.size(), arena_bytes_, separate_bytes_);
  }
  launches_.clear();
  for (const ExecItem& item : captured) {
    Launch l{item.device, item.program, {}, {}, {}, {}, nullptr, 0};
    if (!item.program) l.copy_from = &item.copy_source(), l.copy_bytes = item.copy_bytes();
    for (size_t slot = 0; slot < item.buffers.size(); ++slot) {
      auto it = planned.find(item.buffers[slot]);
      l.keep.push_back(it != planned.end() ? views[it->second] : buffer_of(item.buffers[slot]));
      l.handles.push_back(l.keep.back()->handle());
      for (size_t i = 0; i < in_bufs.size(); ++i)
        if (item.buffers[slot] == in_bufs[i]) l.input_slots.emplace_back(slot, i);
    }
    if (item.program)
      for (const UOp& v : item.program->source().vars)
        l.var_names.push_back(v.arg_as<ParamArg>().name);
    launches_.push_back(std::move(l));
  }
}

void GraphJit::replay(const std::vector<UOp>& in_bufs, const VarVals& vars) {
  if (debug_level() >= 1) fmt::print(stderr, "{}: replaying {} kernels\n", name_, launches_.size());
  std::vector<void*> in_handles;
  in_handles.reserve(in_bufs.size());
  for (const UOp& b : in_bufs) in_handles.push_back(b ? buffer_of(b)->handle() : nullptr);
  std::vector<void*> args;
  std::vector<int64_t> vals;
  for (const Launch& l : launches_) {
    args.assign(l.handles.begin(), l.handles.end());
    for (auto [slot, input] : l.input_slots) args[slot] = in_handles[input];
    vals.clear();
    for (size_t j = 0; j < l.var_names.size(); ++j) {
      auto it = std::find_if(vars.begin(), vars.end(),
                             [&](auto& kv) { return kv.first == l.var_names[j]; });
      if (it == vars.end()) fail("{}: variable '{}' is not bound", name_, l.var_names[j]);
      const ParamArg& p = l.program->source().vars[j].arg_as<ParamArg>();
      if (it->second < p.lo || it->second > p.hi)
        fail("variable '{}' = {} is outside its range [{}, {}]", p.name, it->second, p.lo, p.hi);
      vals.push_back(it->second);
    }
    auto t0 = std::chrono::steady_clock::now();
    if (l.program)
      l.device->launch(*l.program, args, vals);
    else
      copy_between_devices(*l.device, args[0], *l.copy_from, args[1], l.copy_bytes);
    if (debug_level() >= 2) {
      l.device->synchronize();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (l.program)
        print_kernel_line(*l.device, "replay", l.program->source(), seconds, vars);
      else
        print_copy_line("replay", l.copy_bytes, l.copy_from->name(), seconds);
    }
  }
}

}  // namespace ugrad
