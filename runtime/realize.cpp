#include "runtime/realize.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "base/env.h"
#include "base/error.h"
#include "codegen/codegen.h"
#include "runtime/compile_observer.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/kernel_memo.h"
#include "schedule/schedule.h"
#include "uop/alu.h"
#include "uop/symbolic.h"
#include "uop/verify.h"

namespace ugrad {
namespace {

// Device memory of every live BUFFER node, by buffer id; freed when the node dies.
struct BufferRegistry {
  std::mutex mutex;
  std::unordered_map<int64_t, BufferRef> buffers;

  static BufferRegistry& get() {
    static BufferRegistry* r = [] {
      set_buffer_release_hook([](int64_t id) {
        BufferRef dead;  // destroyed outside the lock
        BufferRegistry& reg = get();
        std::lock_guard lock(reg.mutex);
        if (auto it = reg.buffers.find(id); it != reg.buffers.end()) {
          dead = std::move(it->second);
          reg.buffers.erase(it);
        }
      });
      return new BufferRegistry();
    }();
    return *r;
  }
};

// Compiled programs by (device, kernel AST): each kernel is generated and loaded once.
std::shared_ptr<Program> program_for(Device& device, const UOp& ast) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, UOp>, std::shared_ptr<Program>> programs;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(device.name(), ast);
  if (auto it = programs.find(key); it != programs.end()) return it->second;
  ++jit_stats().compiles;
  const auto t0 = std::chrono::steady_clock::now();
  verify_if_enabled(ast, "kernel AST");
  std::shared_ptr<Program> p = device.compile(remembered_codegen(ast, device.target()));
  jit_stats().compile_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  programs.emplace(key, p);
  return p;
}

CompileObserver& compile_observer() {
  static CompileObserver observer;
  return observer;
}

const UOp& buffer_arg_node(const UOp& buffer) {
  if (buffer.op() != Op::BUFFER)
    internal_error("expected a BUFFER node, got {}", op_name(buffer.op()));
  return buffer;
}

}  // namespace

CompileObserver set_compile_observer(CompileObserver observer) {
  return std::exchange(compile_observer(), std::move(observer));
}

UOp new_buffer(const std::string& device, DType dtype, int64_t count) {
  get_device(device);  // unknown devices fail here, at creation
  return buffer_node(device, dtype, count);
}

namespace {

// A kernel must not store into a buffer that wraps read-only host memory (a mapped file).
void check_writable(const ScheduleItem& item) {
  for (const UOp& store : item.ast.src())
    if (store.op() == Op::STORE) {
      const UOp& param = store.src(0).src(0);
      if (buffer_of(item.buffers.at(param.arg_as<ParamArg>().slot))->read_only())
        fail("cannot write into a buffer that wraps read-only host memory (a mapped file)");
    }
}

}  // namespace

UOp host_memory_buffer(const std::string& device, DType dtype, std::span<const std::byte> bytes,
                       std::shared_ptr<const void> owner) {
  const size_t item = itemsize(dtype);
  if (bytes.size() % item != 0)
    fail("host memory of {} bytes is not a whole number of {}", bytes.size(), to_string(dtype));
  UOp node = new_buffer(device, dtype, static_cast<int64_t>(bytes.size() / item));
  if (!get_device(device).reads_host_memory()) {
    copy_in(node, bytes);
    return node;
  }
  BufferRef b = Buffer::make(device, bytes.size(),
                             std::make_shared<HostMemoryAllocator>(bytes, std::move(owner)));
  BufferRegistry& reg = BufferRegistry::get();
  std::lock_guard lock(reg.mutex);
  reg.buffers.emplace(node.arg_as<BufferArg>().id, std::move(b));
  return node;
}

BufferRef buffer_of(const UOp& buffer) {
  const BufferArg& arg = buffer_arg_node(buffer).arg_as<BufferArg>();
  BufferRegistry& reg = BufferRegistry::get();
  std::lock_guard lock(reg.mutex);
  auto it = reg.buffers.find(arg.id);
  if (it != reg.buffers.end()) return it->second;
  Device& dev = get_device(arg.device);
  size_t bytes = static_cast<size_t>(arg.size) * itemsize(buffer.dtype());
  BufferRef b = Buffer::make(arg.device, bytes, dev.allocator());
  reg.buffers.emplace(arg.id, b);
  return b;
}

UOp realized_buffer(const UOp& node) {
  UOp u = node;
  while (is_movement(u.op())) u = u.src(0);
  return u.op() == Op::BUFFER ? u : UOp();
}

void copy_in(const UOp& buffer, std::span<const std::byte> data) {
  BufferRef b = buffer_of(buffer);
  if (data.size() != b->size())
    fail("copy_in: {} bytes into a buffer of {} bytes", data.size(), b->size());
  b->copy_in(data);
}

void copy_out(const UOp& buffer, std::span<std::byte> data) {
  if (CaptureScope::current())
    fail("reading a tensor's value while a JIT is capturing: the read would not be replayed");
  BufferRef b = buffer_of(buffer);
  if (data.size() != b->size())
    fail("copy_out: {} bytes from a buffer of {} bytes", data.size(), b->size());
  get_device(b->device()).synchronize();
  b->copy_out(data);
}

std::vector<UOp> realize(std::span<const UOp> bound_roots) {
  auto [roots, var_vals] =
      unbind_variables(std::vector<UOp>(bound_roots.begin(), bound_roots.end()));
  ++jit_stats().schedules;
  Schedule sched = create_schedule(roots);
  if (debug_level() >= 1 && !sched.items.empty())
    fmt::print(stderr, "scheduled {} kernel{}\n", sched.items.size(),
               sched.items.size() == 1 ? "" : "s");
  for (size_t i = 0; i < sched.items.size(); ++i) {
    const ScheduleItem& item = sched.items[i];
    check_writable(item);
    const std::string& dev_name = item.buffers.at(0).arg_as<BufferArg>().device;
    Device& device = get_device(dev_name);
    const int64_t compiled = jit_stats().compiles;
    ExecItem exec{&device, item.is_copy() ? nullptr : program_for(device, item.ast), item.buffers};
    if (jit_stats().compiles != compiled && compile_observer())
      compile_observer()({static_cast<int64_t>(i + 1), static_cast<int64_t>(sched.items.size()),
                          jit_stats().compiles, jit_stats().compile_seconds});
    if (CaptureScope* capture = CaptureScope::current()) {
      capture->items.push_back(exec);
      if (!capture->run && exec.program) continue;
    }
    auto t0 = std::chrono::steady_clock::now();
    run_exec_item(exec, var_vals);
    if (debug_level() >= 2) {
      device.synchronize();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (exec.program)
        print_kernel_line(device, dev_name, exec.program->source(), seconds, var_vals);
      else
        print_copy_line(dev_name, exec.copy_bytes(), exec.copy_source().name(), seconds);
    }
  }
  // The outputs' symbolic shapes carry the values again, as the roots did.
  for (UOp& out : sched.outputs) out = rebind_variables(out, var_vals);
  return sched.outputs;
}

namespace {

// The estimate's value with every variable bound, node by node through exec_alu: no graph
// rewrite, so DEBUG=2 can afford it at every launch (a rewrite took long enough that the thread
// pool's workers fell asleep between kernels and each printed time doubled). nullopt when a
// variable is unbound or a node is not arithmetic.
std::optional<double> evaluate_bound(const UOp& estimate, const VarVals& var_vals) {
  std::unordered_map<const UOpNode*, ConstValue> value;
  for (const UOp& u : estimate.toposort()) {
    ConstValue v;
    if (u.op() == Op::CONST) {
      v = value_of(u);
    } else if (u.op() == Op::PARAM && u.arg_as<ParamArg>().slot < 0) {
      auto it = std::find_if(var_vals.begin(), var_vals.end(),
                             [&](auto& kv) { return kv.first == u.arg_as<ParamArg>().name; });
      if (it == var_vals.end()) return std::nullopt;
      v = it->second;
    } else if (is_alu(u.op())) {
      std::vector<ConstValue> operands;
      for (const UOp& s : u.src()) operands.push_back(value.at(s.node()));
      const DType src = (u.op() == Op::WHERE ? u.src(1) : u.src(0)).dtype();  // as pm_const_fold
      v = exec_alu(u.op(), u.dtype().base(), operands, src.base());
    } else {
      return std::nullopt;
    }
    value.emplace(u.node(), v);
  }
  return static_cast<double>(const_as_int(value.at(estimate.node())));
}

}  // namespace

double launch_estimate(const UOp& estimate, const VarVals& var_vals) {
  if (auto v = evaluate_bound(estimate, var_vals)) return *v;
  std::vector<std::pair<UOp, UOp>> bound;
  for (const UOp& u : estimate.toposort())
    if (u.op() == Op::PARAM && u.arg_as<ParamArg>().slot < 0)
      for (const auto& [name, value] : var_vals)
        if (name == u.arg_as<ParamArg>().name)
          bound.emplace_back(u, UOp::cnst_int(dtypes::index, value));
  const UOp n = simplify(estimate.substitute(bound));
  return static_cast<double>(n.is_const() ? n.const_int() : n.vmax());
}

}  // namespace ugrad
