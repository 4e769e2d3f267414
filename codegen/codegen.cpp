#include "codegen/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "codegen/decomp.h"
#include "codegen/expand.h"
#include "codegen/gather_load.h"
#include "codegen/gpu_decomp.h"
#include "codegen/gpu_dims.h"
#include "codegen/gpu_opts.h"
#include "codegen/lane_permute.h"
#include "codegen/linearize.h"
#include "codegen/lower_index.h"
#include "codegen/lower_reduce.h"
#include "codegen/ranges.h"
#include "codegen/render_llvm.h"
#include "uop/env.h"
#include "uop/error.h"
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

}  // namespace

KernelSource codegen(const UOp& kernel, const CodegenTarget& target,
                     const CodegenOptions& options) {
  check_ast(kernel);
  const UOp ast = gather_loads(kernel);  // before the opts: a gather's loop over r is gone
  const int debug = debug_level();
  KernelSource ks;
  KernelSignature sig = signature(ast);
  for (const UOp& b : sig.buffers)
    ks.buffers.push_back({b.dtype().base(), b.arg_as<ParamArg>().hi, false});
  for (const UOp& s : ast.src()) ks.buffers[s.src(0).src(0).arg_as<ParamArg>().slot].written = true;
  ks.vars = sig.vars;

  const bool noopt = options.noopt < 0 ? knob_int(Knob::NOOPT) != 0 : options.noopt != 0;
  ks.opts = options.opts ? *options.opts
            : noopt      ? std::vector<Opt>{}
                         : heuristic_opts(ast, target, options.max_threads);
  ks.opts_desc = to_string(ks.opts);
  for (const Opt& o : ks.opts)
    if (o.type == OptType::Thread) ks.cpu_threads = o.amount;

  // Stages, in order; DEBUG=3 names them.
  UOp k = apply_opts(ast, ks.opts);
  if (target.is_gpu) {
    ks.gpu_opts = options.gpu_opts ? *options.gpu_opts
                  : noopt          ? std::vector<GpuOpt>{}
                                   : gpu_heuristic_opts(k, target);
    k = apply_gpu_opts(k, ks.gpu_opts, target);
    if (!ks.gpu_opts.empty()) {
      if (!ks.opts_desc.empty()) ks.opts_desc += ' ';
      ks.opts_desc += to_string(ks.gpu_opts);
    }
  }
  ks.name = unique_name(base_name(k), ast.hash());
  ks.entry = ks.name;
  if (debug >= 3) fmt::print("codegen {}: opts [{}]\n", ks.name, ks.opts_desc);
  if (debug >= 5) fmt::print("{}", k.print_graph());
  k = expand_ranges(k, !target.is_gpu);
  GpuDims dims;
  if (target.is_gpu) k = gpu_dims(k, target, dims);
  k = graph_rewrite(k, pm_simplify_valid());
  k = lane_permutes(k, target);
  k = lower_reduces(k);
  if (target.is_gpu) k = fuse_gpu_accumulators(k);
  k = decompose(k, target);
  if (target.is_gpu) k = graph_rewrite(k, pm_lower_index());
  k = gpu_decompose(k, target);
  std::vector<UOp> program = linearize(k, ks.cpu_threads > 1);
  if (target.is_gpu)
    program = gpu_guard_program(dims.guard ? simplify(dims.guard) : UOp(), program);
  if (debug >= 3)
    fmt::print("  passes: {}\n",
               target.is_gpu
                   ? "opt gpu_opts expand gpu_dims symbolic lower_reduce "
                     "fuse_accumulators decomp lower_index gpu_decomp linearize "
                     "gpu_guard render_llvm"
                   : "opt expand symbolic lane_permute lower_reduce decomp linearize render_llvm");
  if (debug >= 6) fmt::print("{}", print_linear(program));
  ks.src = render_llvm(program, sig, target, ks.entry, target.is_gpu ? gpu_local_threads(dims) : 1);
  if (debug >= 4) fmt::print("{}\n", ks.src);
  if (target.is_gpu) {
    for (const UOp& g : dims.global_size) ks.global_size.push_back(simplify(g));
    ks.local_size = dims.local_size;
  }
  return ks;
}

}  // namespace ugrad
