// The JIT: capture the kernels a function of tensors launches, then replay them.
//
// Call 0 runs the function eagerly; call 1 runs it again while capturing every kernel launch
// (program, buffers; or a capture without running stands for both calls); later calls replay those
// launches with the inputs' buffers swapped in and the values of the input variables, with no
// scheduling and no compiling. Inputs are realized tensors and bound variables
// (schedule/schedule.h); every variable a captured kernel reads must be one of the inputs. Outputs
// of a replay are the buffers captured at call 1, overwritten on every call. Buffers the capture
// call created for itself and that a kernel writes before any reads them (intermediates) share one
// arena planned by lifetime; a buffer the function creates and fills from the host (a constant) is
// kept as it is.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/device.h"
#include "schedule/schedule.h"
#include "uop/shape.h"

namespace ugrad {

/// One kernel launch as realize performed it, or a copy between devices (no program; buffers
/// {destination, source}; `device` is the destination's).
struct ExecItem {
  Device* device;
  std::shared_ptr<Program> program;
  std::vector<UOp> buffers;  // BUFFER nodes by slot
  /// Whether the launch writes buffer `slot`.
  bool writes(size_t slot) const;
  /// A copy's source device and byte count.
  Device& copy_source() const;
  size_t copy_bytes() const;
};

/// DEBUG=2's line for one launch on `device`, headed `label` (the device name, or "replay"):
/// kernel, time, GFLOP/s and GB/s (the kernel's estimates, src.flops and src.bytes, with the
/// variables' values), opts. On a device that runs nothing the line says so instead.
void print_kernel_line(const Device& device, std::string_view label, const KernelSource& src,
                       double seconds, const VarVals& vars);
/// DEBUG=2's line for a copy between devices: bytes, time, GB/s and the source device.
void print_copy_line(const std::string& device, size_t bytes, const std::string& from,
                     double seconds);

/// While alive on a thread, records every launch realize() makes on that thread; with `run`
/// false the programs are compiled and recorded but not run (copies still run), so the values
/// they would compute are undefined. Nesting is an Error.
class CaptureScope {
 public:
  explicit CaptureScope(bool run = true);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  std::vector<ExecItem> items;
  const bool run;
  /// The capture active on this thread, or nullptr.
  static CaptureScope* current();
};

/// Runs one recorded launch with the given variable values.
void run_exec_item(const ExecItem& item, const VarVals& var_vals);

/// Counters that prove what a call did.
struct JitStats {
  int64_t schedules = 0;       // create_schedule calls made through realize()
  int64_t compiles = 0;        // programs generated and compiled (not found in the in-memory map)
  double compile_seconds = 0;  // wall time of those compiles (codegen and device compiler)
};
/// Process-wide counters (realize and the JIT update them).
JitStats& jit_stats();

/// A JIT over a function of input nodes (realized views of buffers, bound variables) returning
/// output nodes.
class GraphJit {
 public:
  using Fn = std::function<std::vector<UOp>(const std::vector<UOp>& inputs)>;
  explicit GraphJit(Fn fn, std::string name = "jit");
  /// Calls the function (eagerly, capturing, or by replay); returns realized outputs, their
  /// symbolic shapes bound to this call's variables.
  std::vector<UOp> operator()(const std::vector<UOp>& inputs);
  /// Captures the function's launches for `inputs` as a call would, compiling every program but
  /// running none (the values it would compute, the writes it would make, are not made): the
  /// next call replays. It skips the eager call, so the function must create no state of its
  /// own on a first call (such a buffer would be planned as an intermediate). Once called, or
  /// with JIT=0, it does nothing.
  void capture_without_running(const std::vector<UOp>& inputs);
  int64_t calls() const { return calls_; }
  /// Number of kernels captured (0 before the capture call).
  size_t captured_kernels() const { return launches_.size(); }
  /// Bytes of the planned intermediate arena, and what the planned buffers would take apart.
  std::pair<size_t, size_t> arena_bytes() const { return {arena_bytes_, separate_bytes_}; }

 private:
  // A captured launch with everything resolved that does not change between calls.
  struct Launch {
    Device* device;
    std::shared_ptr<Program> program;
    std::vector<BufferRef> keep;                         // the captured buffers, kept alive
    std::vector<void*> handles;                          // by slot
    std::vector<std::pair<size_t, size_t>> input_slots;  // (slot, input index) swapped per call
    std::vector<std::string> var_names;                  // the program's variables, in order
    Device* copy_from = nullptr;                         // a copy (no program): its source
    size_t copy_bytes = 0;
  };
  void plan_launches(const std::vector<ExecItem>& captured, const std::vector<UOp>& outs,
                     const std::vector<UOp>& in_bufs, int64_t first_new_buffer);
  /// The capture call: the function realized while recording its launches (run or not).
  std::vector<UOp> capture(const std::vector<UOp>& inputs, const std::vector<UOp>& in_bufs,
                           const VarVals& vars, bool run);
  void replay(const std::vector<UOp>& in_bufs, const VarVals& vars);
  /// Checks the inputs against the capture's; returns their buffers and variable values.
  std::pair<std::vector<UOp>, VarVals> read_inputs(const std::vector<UOp>& inputs) const;

  Fn fn_;
  std::string name_;
  int64_t calls_ = 0;
  std::vector<Launch> launches_;
  size_t arena_bytes_ = 0, separate_bytes_ = 0;
  std::vector<UOp> signature_;  // per input: its buffer view or its (unbound) variable
  std::vector<UOp> outputs_;    // their variables unbound
};

}  // namespace ugrad
