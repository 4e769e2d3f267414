// What codegen made of a kernel AST, remembered in the program cache (runtime/program_cache.h) for
// later processes: the heuristics' choice of opts (codegen/opt/, most of codegen's time) and, for
// the CPU, the whole source, so that a warm start neither searches nor lowers (the program cache
// itself, keyed by the source, only spares the LLVM compile after codegen). An entry is keyed by
// a SHA-256 digest of the AST's structure, the target and the build of the code that made it (the
// ELF build id of the object holding codegen), so a rebuilt codegen starts afresh. A remembered
// choice that does not apply to the AST is dropped and the heuristics run.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "runtime/program_cache.h"
#include "uop/uop.h"

namespace ugrad {

struct RememberedKernel {
  std::vector<Opt> opts;  // the heuristics' choice
  std::vector<GpuOpt> gpu_opts;
  std::optional<StoredKernel> kernel;  // the CPU's whole source
  friend bool operator==(const RememberedKernel&, const RememberedKernel&) = default;
};

/// The entry's text, and back (nullopt for text that is not one: a damaged entry).
std::string serialize_kernel(const RememberedKernel& k);
std::optional<RememberedKernel> parse_kernel(std::string_view text);

/// The entry for `ast` on `target` with `max_threads` (codegen's option), or nullopt.
std::optional<RememberedKernel> remembered_kernel(ProgramCache& cache, const UOp& ast,
                                                  const CodegenTarget& target, int64_t max_threads);
void remember_kernel(ProgramCache& cache, const UOp& ast, const CodegenTarget& target,
                     int64_t max_threads, const RememberedKernel& k);

/// codegen(ast, target) through the process-wide cache: a CPU kernel restored whole unless
/// DEBUG >= 2 (which prints codegen's cost estimates), else the remembered opts applied, else the
/// heuristics' search (then remembered). NOOPT=1 bypasses it.
KernelSource remembered_codegen(const UOp& ast, const CodegenTarget& target);

}  // namespace ugrad
