// The host CPU JIT: loads relocatable object bytes (from llvm_compile_object, or from a disk cache)
// into ORC LLJIT and hands out function pointers. Each loaded program lives in its own JITDylib, so
// the same symbol name can be loaded any number of times, and releasing a program frees its code.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ugrad {

class CpuJit;

/// One loaded object. Destroying it removes its code from the JIT; pointers from symbol() dangle.
class CpuProgram {
 public:
  ~CpuProgram();
  CpuProgram(const CpuProgram&) = delete;
  CpuProgram& operator=(const CpuProgram&) = delete;

  /// Address of a defined symbol; Error naming the symbol and program if absent.
  void* symbol(std::string_view name) const;
  /// symbol() cast to a function pointer type.
  template <typename Fn>
  Fn function(std::string_view name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }
  /// The label given at load time, with a unique suffix.
  const std::string& label() const { return label_; }

 private:
  friend class CpuJit;
  CpuProgram(CpuJit* jit, void* dylib, std::string label)
      : jit_(jit), dylib_(dylib), label_(std::move(label)) {}
  CpuJit* jit_;
  void* dylib_;  // llvm::orc::JITDylib*
  std::string label_;
};

/// Where PERF_MAP=1 names the kernels this process loads, for perf: /tmp/perf-<pid>.map.
std::string perf_map_path();

/// The process-wide ORC LLJIT for the host CPU. All members are thread-safe.
class CpuJit {
 public:
  /// The process-wide instance (created on first use, never destroyed).
  static CpuJit& instance();

  /// Loads an ELF relocatable object for the host; `label` names it in errors.
  std::unique_ptr<CpuProgram> load(std::span<const uint8_t> object, std::string_view label);

  /// The host target the JIT runs (cpu name and features), as in cpu_target().describe().
  std::string describe() const;

  struct Impl;

 private:
  CpuJit();
  ~CpuJit();
  friend class CpuProgram;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ugrad
