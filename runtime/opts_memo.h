// The optimizations the heuristics chose for a kernel, remembered in the program cache
// (runtime/program_cache.h) so that a later process applies them without searching again: the
// search (codegen/opt/) is most of a warm start's codegen, while the program cache only spares the
// LLVM compile after it. An entry is keyed by the kernel AST's structural hash, the target and the
// build of the code that chose (the ELF build id of the object holding the heuristics), so a
// rebuilt heuristic chooses afresh. A remembered choice that does not apply (a hash collision) is
// dropped and the heuristic runs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/opt/gpu_opts.h"
#include "codegen/opt/opt.h"
#include "codegen/target.h"
#include "runtime/program_cache.h"
#include "uop/uop.h"

namespace ugrad {

struct ChosenOpts {
  std::vector<Opt> opts;
  std::vector<GpuOpt> gpu_opts;
  friend bool operator==(const ChosenOpts&, const ChosenOpts&) = default;
};

/// The entry's text, and back (nullopt for text that is not one: a damaged entry).
std::string serialize_opts(const ChosenOpts& c);
std::optional<ChosenOpts> parse_opts(std::string_view text);

/// The choice remembered for `ast` on `target` with `max_threads` (codegen's option), or nullopt.
std::optional<ChosenOpts> remembered_opts(ProgramCache& cache, const UOp& ast,
                                          const CodegenTarget& target, int64_t max_threads);
void remember_opts(ProgramCache& cache, const UOp& ast, const CodegenTarget& target,
                   int64_t max_threads, const ChosenOpts& chosen);

}  // namespace ugrad
