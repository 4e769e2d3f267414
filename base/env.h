// The one registry of environment knobs. Every knob is declared here once and listed in docs/env.md
// (a test keeps the two in step).
#pragma once
#include <cstdint>
#include <span>
#include <string>

namespace ugrad {

// X(name, default value, description)
#define UGRAD_FOR_EACH_KNOB(X)                                                                     \
  X(DEBUG, "0",                                                                                    \
    "Verbosity ladder: 1 schedule/JIT summaries, 2 one line per kernel, 3 optimizations and "      \
    "passes, 4 LLVM IR, 5 kernel UOp graphs, 6 linearized UOps, 7 machine code")                   \
  X(DEV, "CPU", "Default device: CPU, NULL, NULL:<amd-arch> (e.g. NULL:gfx1100), AMD")             \
  X(NOOPT, "0", "1 disables kernel optimizations (upcast, unroll, threads, locals)")               \
  X(JIT, "1", "0 makes JIT-wrapped functions run eagerly every call")                              \
  X(THREADS, "0", "CPU worker threads (0 = one per core)")                                         \
  X(PRINT_AFTER, "",                                                                               \
    "Prints each kernel's UOp graph after the named codegen pass (DEBUG=3 lists them), or all")    \
  X(VERIFY, "0", "1 runs the UOp verifier after every stage (always on in debug builds)")          \
  X(CACHE, "1", "0 disables the on-disk program cache")                                            \
  X(CACHE_DIR, "", "Program cache directory (default $XDG_CACHE_HOME/ugrad or ~/.cache/ugrad)")    \
  X(REWRITE_LIMIT, "1000000", "Step limit of graph_rewrite before it reports a looping rule")      \
  X(HIP_LIB, "", "Path of the HIP runtime library (default: libamdhip64.so, .so.6, .so.5)")        \
  X(AMD_COV, "5", "AMD HSA code object version: 5 (default) or 4")                                 \
  X(HF_HUB_CACHE, "", "Hugging Face hub cache (default $HF_HOME/hub)")                             \
  X(HF_HOME, "",                                                                                   \
    "Hugging Face home (default $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface)")             \
  X(HF_ENDPOINT, "https://huggingface.co", "The Hugging Face hub `llm pull` downloads from")       \
  X(HF_TOKEN, "", "Hugging Face token for gated or private repositories")                          \
  X(PERF_MAP, "0", "1 names JIT-compiled CPU kernels for perf in /tmp/perf-<pid>.map")             \
  X(MOCKGPU_POISON, "1",                                                                           \
    "Emulator: 1 fills fresh device memory, LDS and scratch with a NaN pattern; 0 with zeros")     \
  X(MOCKGPU_SEED, "1", "Emulator: seed of the shuffled wave/workgroup order; 0 runs in order")     \
  X(MOCKGPU_SAMPLE, "1", "Emulator: run every k-th workgroup only (modeling; results incomplete)") \
  X(LLM_KERNELS, "1", "0 runs llm/kernels' generic tensor paths only (A/B comparisons)")           \
  X(CPU_LEVEL, "native",                                                                           \
    "CPU kernels' instruction set: native (the host's) or avx2 (no AVX-512/VNNI: the fallback)")

enum class Knob {
#define UGRAD_KNOB_ENUM(name, def, doc) name,
  UGRAD_FOR_EACH_KNOB(UGRAD_KNOB_ENUM)
#undef UGRAD_KNOB_ENUM
};

struct KnobInfo {
  Knob knob;
  const char* name;
  const char* default_value;
  const char* doc;
};

/// Every knob, in declaration order.
std::span<const KnobInfo> all_knobs();
/// The knob's current value as text: a test override, else the environment, else the default.
std::string knob_str(Knob k);
/// The knob's current value as an integer; a non-integer value is an Error naming the knob.
int64_t knob_int(Knob k);
/// Shorthand for knob_int(Knob::DEBUG), cached: safe on hot paths.
int debug_level();

/// Overrides a knob for the lifetime of this object (tests, tools).
class ScopedKnob {
 public:
  ScopedKnob(Knob k, std::string value);
  ~ScopedKnob();
  ScopedKnob(const ScopedKnob&) = delete;
  ScopedKnob& operator=(const ScopedKnob&) = delete;

 private:
  Knob knob_;
  bool had_previous_;
  std::string previous_;
};

}  // namespace ugrad
