#include "codegen/codegen.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <span>

#include "base/env.h"
#include "base/error.h"
#include "codegen/cost.h"
#include "codegen/kernel_builder.h"
#include "codegen/lower/cpu_workgroups.h"
#include "codegen/lower/decomp.h"
#include "codegen/lower/expand.h"
#include "codegen/lower/gather_load.h"
#include "codegen/lower/gpu_decomp.h"
#include "codegen/lower/gpu_dims.h"
#include "codegen/lower/lane_permute.h"
#include "codegen/lower/linearize.h"
#include "codegen/lower/lower_index.h"
#include "codegen/lower/lower_reduce.h"
#include "codegen/opt/dot4.h"
#include "codegen/opt/gpu_opts.h"
#include "codegen/ranges.h"
#include "codegen/render/render_llvm.h"
#include "uop/symbolic.h"

namespace ugrad {

namespace {

void check_ast(const UOp& ast) {
  if (ast.op() != Op::SINK) fail("codegen: a kernel AST is a SINK, got {}", op_name(ast.op()));
  for (const UOp& s : ast.src())
    if (s.op() != Op::STORE || s.src(0).op() != Op::INDEX || s.src(0).src(0).op() != Op::PARAM)
      fail("codegen: every SINK source is a STORE to INDEX(PARAM, ...), got {}", op_name(s.op()));
}

KernelSignature signature(const UOp& ast) {
  KernelSignature sig;
  for (const UOp& u : ast.toposort()) {
    if (u.op() != Op::PARAM) continue;
    (u.arg_as<ParamArg>().slot >= 0 ? sig.buffers : sig.vars).push_back(u);
  }
  std::sort(sig.buffers.begin(), sig.buffers.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<ParamArg>().slot < b.arg_as<ParamArg>().slot;
  });
  for (size_t i = 0; i < sig.buffers.size(); ++i)
    if (sig.buffers[i].arg_as<ParamArg>().slot != int64_t(i))
      fail("codegen: buffer slots must be 0..{} without gaps (slot {} missing)",
           sig.buffers.size() - 1, i);
  std::sort(sig.vars.begin(), sig.vars.end(), [](const UOp& a, const UOp& b) {
    return a.arg_as<ParamArg>().name < b.arg_as<ParamArg>().name;
  });
  return sig;
}

// E_4_16 (elementwise) or r_16_32 (with a reduce): output axis extents, then reduce extents, in
// axis order (scratch copy loops are not named).
std::string base_name(const UOp& ast) {
  const RangeMap open = open_ranges(ast);
  std::vector<UOp> outs, reds;
  for (const UOp& s : ast.src())
    for (const UOp& r : open.at(s))
      if (std::find(outs.begin(), outs.end(), r) == outs.end()) outs.push_back(r);
  for (const UOp& u : ast.toposort())
    if (u.op() == Op::REDUCE)
      for (size_t i = 1; i < u.src().size(); ++i)
        if (std::find(reds.begin(), reds.end(), u.src(i)) == reds.end()) reds.push_back(u.src(i));
  auto by_axis = [](const UOp& a, const UOp& b) {
    return a.arg_as<RangeArg>().axis < b.arg_as<RangeArg>().axis;
  };
  std::sort(outs.begin(), outs.end(), by_axis);
  std::sort(reds.begin(), reds.end(), by_axis);
  std::string name = reds.empty() ? "E" : "r";
  for (const auto* list : {&outs, &reds})
    for (const UOp& r : *list) {
      std::string dim =
          r.src(0).is_const() ? std::to_string(r.src(0).const_int()) : r.src(0).render();
      for (char& c : dim)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      name += "_" + dim;
    }
  return name;
}

// Different ASTs with the same name get a suffix, so names identify kernels in a process.
std::string unique_name(const std::string& base, uint64_t hash) {
  static std::mutex mu;
  static std::map<std::string, std::vector<uint64_t>> seen;
  std::lock_guard lock(mu);
  auto& hashes = seen[base];
  auto it = std::find(hashes.begin(), hashes.end(), hash);
  size_t i = it - hashes.begin();
  if (it == hashes.end()) hashes.push_back(hash);
  return i == 0 ? base : fmt::format("{}n{}", base, i);
}

std::string print_linear(const std::vector<UOp>& program) {
  std::map<const UOpNode*, size_t> at;
  std::string s;
  for (size_t i = 0; i < program.size(); ++i) {
    const UOp& u = program[i];
    at[u.node()] = i;
    std::string src;
    for (const UOp& x : u.src()) {
      auto it = at.find(x.node());
      src += it == at.end() ? (x.is_const() ? arg_to_string(x.arg()) : std::string("_")) + " "
                            : fmt::format("%{} ", it->second);
    }
    s += fmt::format("{:4} {:<10} {:<12} {:<24} {}\n", i, op_name(u.op()), to_string(u.dtype()),
                     src, arg_to_string(u.arg()));
  }
  return s;
}

// What the passes share: the target, the kernel being filled in, and what one pass hands a later
// one (the launch dims gpu_dims chooses, read by the GPU guard and the launch).
struct PassState {
  const CodegenTarget& target;
  const CodegenOptions& options;
  bool noopt;
  KernelSource& ks;
  GpuDims dims;
};

enum class On : uint8_t { Any, Cpu, Gpu };

// One named stage of the pipeline: DEBUG=3 lists the names, PRINT_AFTER=<name> prints the kernel
// graph after it. `run` rewrites the kernel graph; the program passes (after linearize) have none.
struct Pass {
  const char* name;
  On on;
  UOp (*run)(const UOp& k, PassState& st);
};

bool runs_on(const Pass& p, const CodegenTarget& target) {
  return p.on == On::Any || (p.on == On::Gpu) == target.is_gpu;
}

// codegen/opt/: the optimization choices, as data (KernelSource::opts, gpu_opts), and their
// application to the kernel AST.
constexpr Pass kOptPasses[] = {
    // before the opts: a gather's loop over r is gone
    {"gather_load", On::Any, [](const UOp& k, PassState&) { return gather_loads(k); }},
    // no rewrite: the kernel's work and memory, estimated before the opts reshape its loops
    {"cost", On::Any,
     [](const UOp& k, PassState& st) {
       st.ks.flops = estimate_flops(k);
       st.ks.bytes = estimate_bytes(k);
       return k;
     }},
    {"opt", On::Any,
     [](const UOp& k, PassState& st) {
       KernelSource& ks = st.ks;
       ks.opts = st.options.opts ? *st.options.opts
                 : st.noopt      ? std::vector<Opt>{}
                                 : heuristic_opts(k, st.target, st.options.max_threads);
       for (const Opt& o : ks.opts)
         if (o.type == OptType::Thread) ks.cpu_threads = o.amount;
       return apply_opts(k, ks.opts);
     }},
    {"gpu_opt", On::Gpu,
     [](const UOp& k, PassState& st) {
       st.ks.gpu_opts = st.options.gpu_opts ? *st.options.gpu_opts
                        : st.noopt          ? std::vector<GpuOpt>{}
                                            : gpu_heuristic_opts(k, st.target);
       return apply_gpu_opts(k, st.ks.gpu_opts, st.target);
     }},
};

// codegen/lower/: from the optimized AST down to a graph the linearizer can order.
constexpr Pass kLowerPasses[] = {
    {"expand", On::Any,
     [](const UOp& k, PassState& st) { return expand_ranges(k, !st.target.is_gpu); }},
    {"gpu_dims", On::Gpu,
     [](const UOp& k, PassState& st) { return gpu_dims(k, st.target, st.dims); }},
    {"cpu_workgroups", On::Cpu,
     [](const UOp& k, PassState& st) {
       return cpu_workgroups(k, cpu_cores(st.options.max_threads), st.ks.cpu_threads);
     }},
    {"symbolic", On::Any,
     [](const UOp& k, PassState&) { return graph_rewrite(k, pm_simplify_valid()); }},
    {"lane_permute", On::Any,
     [](const UOp& k, PassState& st) { return lane_permutes(k, st.target); }},
    {"lower_reduce", On::Any, [](const UOp& k, PassState&) { return lower_reduces(k); }},
    {"fuse_accumulators", On::Gpu,
     [](const UOp& k, PassState&) { return fuse_gpu_accumulators(k); }},
    {"fuse_dot4", On::Cpu,
     [](const UOp& k, PassState&) { return graph_rewrite(k, pm_fuse_dot4()); }},
    {"decomp", On::Any, [](const UOp& k, PassState& st) { return decompose(k, st.target); }},
    {"lower_index", On::Gpu,
     [](const UOp& k, PassState&) { return graph_rewrite(k, pm_lower_index()); }},
    {"gpu_decomp", On::Gpu,
     [](const UOp& k, PassState& st) { return gpu_decompose(k, st.target); }},
};

// After the graph passes, run by codegen() itself: one ordered program, guarded on the GPU,
// rendered to LLVM IR.
constexpr Pass kProgramPasses[] = {
    {"linearize", On::Any, nullptr},
    {"gpu_guard", On::Gpu, nullptr},
    {"render_llvm", On::Any, nullptr},
};

UOp run_passes(std::span<const Pass> passes, UOp k, PassState& st) {
  const std::string print_after = knob_str(Knob::PRINT_AFTER);
  for (const Pass& p : passes) {
    if (!runs_on(p, st.target)) continue;
    k = p.run(k, st);
    if (!print_after.empty() && (print_after == p.name || print_after == "all"))
      fmt::print("{} after {}:\n{}", st.ks.name.empty() ? "kernel" : st.ks.name, p.name,
                 k.print_graph());
  }
  return k;
}

}  // namespace

std::vector<std::string> codegen_pass_names(const CodegenTarget& target) {
  std::vector<std::string> names;
  using Table = std::span<const Pass>;
  for (Table table : {Table(kOptPasses), Table(kLowerPasses), Table(kProgramPasses)})
    for (const Pass& p : table)
      if (runs_on(p, target)) names.push_back(p.name);
  return names;
}

namespace {

// The buffers and variables of the kernel's signature.
void fill_signature(KernelSource& ks, const UOp& kernel, const KernelSignature& sig) {
  for (const UOp& b : sig.buffers)
    ks.buffers.push_back({b.dtype().base(), b.arg_as<ParamArg>().hi, false});
  for (const UOp& s : kernel.src())
    ks.buffers[s.src(0).src(0).arg_as<ParamArg>().slot].written = true;
  ks.vars = sig.vars;
}

}  // namespace

StoredKernel stored_kernel(const KernelSource& ks) {
  return {ks.name, ks.entry, ks.src, ks.opts, ks.cpu_threads};
}

KernelSource restore_kernel(const UOp& kernel, const StoredKernel& stored) {
  check_ast(kernel);
  KernelSource ks;
  fill_signature(ks, kernel, signature(kernel));
  ks.name = unique_name(stored.name, kernel.hash());
  ks.entry = stored.entry;
  ks.src = stored.src;
  ks.opts = stored.opts;
  ks.opts_desc = to_string(ks.opts);
  ks.cpu_threads = stored.cpu_threads;
  return ks;
}

KernelSource codegen(const UOp& kernel, const CodegenTarget& target,
                     const CodegenOptions& options) {
  check_ast(kernel);
  const int debug = debug_level();
  KernelSource ks;
  KernelSignature sig = signature(kernel);
  fill_signature(ks, kernel, sig);

  // A named AST is hand-written (kernel_builder.h): its schedule is the author's, not the
  // heuristics'.
  const std::string hand_written = hand_written_name(kernel);
  const bool noopt = !hand_written.empty() ||
                     (options.noopt < 0 ? knob_int(Knob::NOOPT) != 0 : options.noopt != 0);
  PassState st{target, options, noopt, ks, {}};
  UOp k = run_passes(kOptPasses, kernel, st);
  ks.opts_desc = to_string(ks.opts);
  if (!ks.gpu_opts.empty()) {
    if (!ks.opts_desc.empty()) ks.opts_desc += ' ';
    ks.opts_desc += to_string(ks.gpu_opts);
  }
  ks.name = unique_name(!hand_written.empty() ? hand_written : base_name(k), kernel.hash());
  ks.entry = ks.name;
  // the AST's structural hash: what every cache keys on, and what tells two kernels apart
  if (debug >= 3)
    fmt::print("codegen {} {:016x}: opts [{}]\n", ks.name, kernel.hash(), ks.opts_desc);
  if (debug >= 5) fmt::print("{}", k.print_graph());
  k = run_passes(kLowerPasses, k, st);

  std::vector<UOp> program = linearize(k, ks.cpu_threads > 1);
  if (target.is_gpu)
    program = gpu_guard_program(st.dims.guard ? simplify(st.dims.guard) : UOp(), program);
  if (debug >= 3) fmt::print("  passes: {}\n", fmt::join(codegen_pass_names(target), " "));
  if (debug >= 6) fmt::print("{}", print_linear(program));
  ks.src =
      render_llvm(program, sig, target, ks.entry, target.is_gpu ? gpu_local_threads(st.dims) : 1);
  if (debug >= 4) fmt::print("{}\n", ks.src);
  if (target.is_gpu) {
    for (const UOp& g : st.dims.global_size) ks.global_size.push_back(simplify(g));
    ks.local_size = st.dims.local_size;
  }
  return ks;
}

}  // namespace ugrad
