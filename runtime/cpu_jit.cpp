#include "runtime/cpu_jit.h"

#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/env.h"
#include "base/error.h"
#include "runtime/llvm_impl.h"

namespace ugrad {

namespace {
std::string take_message(llvm::Error err) { return llvm::toString(std::move(err)); }

// PERF_MAP=1: `start size name` per global function of each loaded object, in the file where
// perf looks for the symbols of JIT code. Written as the objects load, so a profile taken while
// the program runs can name every kernel.
void write_perf_map(const CpuProgram& program, std::span<const uint8_t> object) {
  static std::mutex mutex;
  static FILE* out = nullptr;
  auto elf = llvm::object::ObjectFile::createELFObjectFile(llvm::MemoryBufferRef(
      llvm::StringRef(reinterpret_cast<const char*>(object.data()), object.size()), "object"));
  if (!elf) fail("PERF_MAP: {}: {}", program.label(), take_message(elf.takeError()));
  std::lock_guard lock(mutex);
  if (out == nullptr) {
    const std::string path = perf_map_path();
    out = std::fopen(path.c_str(), "w");
    if (out == nullptr) fail("PERF_MAP: cannot write {}: {}", path, std::strerror(errno));
  }
  for (const llvm::object::ELFSymbolRef sym : (*elf)->symbols()) {
    auto type = sym.getType();
    auto flags = sym.getFlags();
    auto name = sym.getName();
    if (!type || !flags || !name) fail("PERF_MAP: {}: unreadable symbol table", program.label());
    if (*type != llvm::object::SymbolRef::ST_Function ||
        !(*flags & llvm::object::SymbolRef::SF_Global) ||
        (*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    fmt::print(out, "{:x} {:x} {}\n", reinterpret_cast<uintptr_t>(program.symbol(name->str())),
               sym.getSize(), name->str());
  }
  std::fflush(out);
}
}  // namespace

std::string perf_map_path() { return fmt::format("/tmp/perf-{}.map", getpid()); }

struct CpuJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::atomic<uint64_t> next_id{0};
  std::string host;
};

CpuJit::CpuJit() : impl_(std::make_unique<Impl>()) {
  llvm_impl::init_targets();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail("cpu jit: cannot detect the host: {}", take_message(jtmb.takeError()));
  impl_->host = jtmb->getCPU();
  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) fail("cpu jit: cannot create LLJIT: {}", take_message(jit.takeError()));
  impl_->jit = std::move(*jit);
}

CpuJit::~CpuJit() = default;

CpuJit& CpuJit::instance() {
  // Leaked on purpose: programs held by other static objects may be released during exit.
  static CpuJit* jit = new CpuJit();
  return *jit;
}

std::string CpuJit::describe() const { return "cpu:" + impl_->host; }

std::unique_ptr<CpuProgram> CpuJit::load(std::span<const uint8_t> object, std::string_view label) {
  std::string unique = fmt::format("{}#{}", label, impl_->next_id.fetch_add(1));
  auto jd = impl_->jit->createJITDylib(unique);
  if (!jd) fail("cpu jit: {}: cannot create a JITDylib: {}", unique, take_message(jd.takeError()));
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char*>(object.data()), object.size()), unique);
  if (llvm::Error err = impl_->jit->addObjectFile(*jd, std::move(buffer))) {
    std::string msg = take_message(std::move(err));
    llvm::consumeError(impl_->jit->getExecutionSession().removeJITDylib(*jd));
    fail("cpu jit: {}: cannot load object ({} bytes): {}", unique, object.size(), msg);
  }
  auto program = std::unique_ptr<CpuProgram>(new CpuProgram(this, &*jd, std::move(unique)));
  if (knob_int(Knob::PERF_MAP) != 0) write_perf_map(*program, object);
  return program;
}

CpuProgram::~CpuProgram() {
  auto* jd = static_cast<llvm::orc::JITDylib*>(dylib_);
  // Errors here mean a bug in ORC bookkeeping; nothing useful can be done in a destructor.
  llvm::consumeError(jit_->impl_->jit->getExecutionSession().removeJITDylib(*jd));
}

void* CpuProgram::symbol(std::string_view name) const {
  auto* jd = static_cast<llvm::orc::JITDylib*>(dylib_);
  // Materialization (linking the object) happens on the first lookup.
  auto addr = jit_->impl_->jit->lookup(*jd, llvm::StringRef(name.data(), name.size()));
  if (!addr)
    fail("cpu jit: {}: symbol '{}' not found: {}", label_, name, take_message(addr.takeError()));
  return addr->toPtr<void*>();
}

}  // namespace ugrad
