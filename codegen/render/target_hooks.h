// Private to codegen/render: what the shared LLVM IR renderer (render_llvm.cpp) asks of a target.
// The renderer walks the program and renders everything every target has; a target's hooks render
// what only it has: AMDGPU (amdgpu_hooks.cpp) launch indices, barriers, LDS, WMMA tiles and v_dot4;
// x86 (x86_hooks.cpp) VNNI dot products, byte shuffles and AVX-512 lane permutes. A hook a target
// does not override rejects the op: a kernel that reaches it was lowered for another target (a
// bug).
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "codegen/target.h"
#include "uop/uop.h"

namespace ugrad {

/// The renderer as a hook sees it: fresh value names, instructions, declarations, and the names
/// of the values already rendered.
class RenderContext {
 public:
  virtual ~RenderContext() = default;
  virtual const CodegenTarget& target() const = 0;
  /// Lanes of the kernel's vector axis (1 without one).
  virtual int64_t lanes() const = 0;
  /// A new SSA name: %vN.
  virtual std::string fresh() = 0;
  /// The name of a rendered value (a constant's literal).
  virtual const std::string& name(const UOp& u) = 0;
  /// `u` as a <lanes x T> vector (broadcast when scalar) if `want_vec`, else as it is.
  virtual std::string val(const UOp& u, bool want_vec) = 0;
  /// Adds a declaration (deduplicated) / a module global / an entry-block alloca line.
  virtual void declare(std::string decl) = 0;
  virtual void add_global(std::string line) = 0;
  virtual void add_alloca(std::string line) = 0;
  /// Appends one instruction line to the current block.
  virtual void emit_line(std::string line) = 0;
  template <typename... Args>
  void emit(fmt::format_string<Args...> f, Args&&... args) {
    emit_line(fmt::format(f, std::forward<Args>(args)...));
  }
};

/// A value a hook rendered: its name, and whether it is a <lanes x T> vector of the vector axis.
struct Rendered {
  std::string name;
  bool vec = false;
};

class TargetHooks {
 public:
  virtual ~TargetHooks() = default;
  /// SPECIAL: a launch index (gidx0, lidx1, ...).
  virtual std::string special(RenderContext& r, const UOp& u) const;
  /// BARRIER: every thread of the workgroup reaches it before any goes on.
  virtual void barrier(RenderContext& r) const;
  /// DEFINE_LOCAL: the name of a local array. Default: stack scratch (CPU packed operands).
  virtual std::string local_array(RenderContext& r, const UOp& u) const;
  /// The pointer type of an access into a local array.
  virtual std::string local_ptr_type(const CodegenTarget&) const { return "ptr"; }
  /// DOT4 `u` (uop/ops.h) on `words` lanes: one instruction, or a rejection (pm_decomp has
  /// turned every form the target has no instruction for into byte products).
  virtual std::string dot4(RenderContext& r, const UOp& u, int64_t words) const;
  /// BYTE_LUT `u` (uop/ops.h) on `words` lanes: one byte shuffle, or a rejection (pm_decomp has
  /// turned every other into shifts and selects).
  virtual std::string byte_lut(RenderContext& r, const UOp& u, int64_t words) const;
  /// CUSTOM and WMMA: the target's own instructions.
  virtual Rendered instruction(RenderContext& r, const UOp& u) const;
};

/// The hooks of `target`: AMDGPU for a GPU, x86 for the host CPU.
const TargetHooks& target_hooks(const CodegenTarget& target);
const TargetHooks& amdgpu_hooks();
const TargetHooks& x86_hooks();

/// The <n x T> type of an explicitly vector-typed value (a WMMA fragment, a DOT4 word's bytes).
std::string vector_type(DType t);

}  // namespace ugrad
