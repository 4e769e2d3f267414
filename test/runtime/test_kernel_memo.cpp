// What codegen made of a kernel, remembered across processes (runtime/kernel_memo.h): the entry
// format, its key, and realize() using it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "base/env.h"
#include "codegen/codegen.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/kernel_memo.h"
#include "runtime/realize.h"
#include "schedule/schedule.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("ugrad_test_kernel_memo_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const RememberedKernel kChoice{
    {{OptType::Unroll, 1, 16}, {OptType::Upcast, 0, 8}, {OptType::Thread, 0, 2}},
    {{GpuOptType::GroupReduce, 1, 256}},
    std::nullopt};

// An (n, 64) x (64, 32) matmul: one kernel, which the heuristics optimize (values do not matter).
UOp matmul_graph(int64_t n = 16) { return matmul(input({n, 64}), input({64, 32}), n, 64, 32); }

// The kernel AST of a one-kernel graph, and the opts realize() compiled it with.
std::pair<UOp, std::vector<Opt>> realized_with(const UOp& graph) {
  UOp ast = create_schedule({graph}).items.at(0).ast;
  std::vector<ExecItem> items;
  {
    CaptureScope capture;
    realize(std::vector<UOp>{graph});
    items = std::move(capture.items);
  }
  return {ast, items.at(0).program->source().opts};
}

}  // namespace

TEST_CASE("entries round-trip, and damaged ones are not read") {
  CHECK(parse_kernel(serialize_kernel(kChoice)) == kChoice);
  CHECK(parse_kernel(serialize_kernel({})) == RememberedKernel{});
  RememberedKernel whole{{{OptType::Upcast, 0, 4}}, {}, StoredKernel{}};
  whole.kernel = StoredKernel{
      "r_4_8n1", "r_4_8n1", "define void @x() {\n  ret void\n}\n", {{OptType::Upcast, 0, 4}}, 2};
  CHECK(parse_kernel(serialize_kernel(whole)) == whole);
  CHECK(!parse_kernel("kernel memo v2\n"));
  CHECK(!parse_kernel(""));
  CHECK(!parse_kernel("kernel memo v1\no 1 2\n"));      // a field missing
  CHECK(!parse_kernel("kernel memo v1\no 1 2 3 4\n"));  // one too many
  CHECK(!parse_kernel("kernel memo v1\nx 1 2 3\n"));    // an unknown kind
  CHECK(!parse_kernel("kernel memo v1\no 99 2 3\n"));   // an unknown opt type
  CHECK(!parse_kernel("kernel memo v1\ng -1 2 3\n"));
  CHECK(!parse_kernel("kernel memo v1\no 1 2 3"));                       // cut short
  CHECK(!parse_kernel("kernel memo v1\nname a\nentry a\nsrc\n"));        // no thread count
  CHECK(!parse_kernel("kernel memo v1\nname a\nentry a\nthreads 1\n"));  // no source
}

TEST_CASE("an entry is kept per AST, target and thread limit, on disk for later processes") {
  TempDir dir;
  const CodegenTarget cpu = cpu_codegen_target();
  CodegenTarget wider = cpu;
  wider.simd_bytes *= 2;
  const UOp a = matmul_graph(), b = matmul_graph(8);
  {
    ProgramCache cache(dir.path);
    CHECK(!remembered_kernel(cache, a, cpu, 0));
    remember_kernel(cache, a, cpu, 0, kChoice);
    CHECK(remembered_kernel(cache, a, cpu, 0) == kChoice);
    CHECK(!remembered_kernel(cache, b, cpu, 0));
    CHECK(!remembered_kernel(cache, a, wider, 0));
    CHECK(!remembered_kernel(cache, a, cpu, 1));
  }
  ProgramCache later(dir.path);  // a new process's cache over the same folder
  CHECK(remembered_kernel(later, a, cpu, 0) == kChoice);
  CHECK(later.stats().disk_hits == 1);
}

TEST_CASE("realize remembers codegen, restores a CPU kernel whole, applies remembered opts") {
  TempDir dir;
  ScopedKnob where(Knob::CACHE_DIR, dir.path.string());
  ProgramCache::reset_instance();
  const CodegenTarget& target = get_device("CPU").target();
  // First sight: codegen runs, its choice and source are remembered.
  const UOp graph = matmul_graph();
  auto [ast, opts] = realized_with(graph);
  const KernelSource fresh = codegen(ast, target);
  CHECK(!opts.empty());
  CHECK(opts == fresh.opts);
  std::optional<RememberedKernel> k = remembered_kernel(ProgramCache::instance(), ast, target, 0);
  REQUIRE(k);
  CHECK(k->opts == opts);
  REQUIRE(k->kernel);
  CHECK(k->kernel->src == fresh.src);
  // Restored whole: the same source, signature and launch; the name unique in this process.
  const KernelSource restored = restore_kernel(ast, *k->kernel);
  CHECK(restored.src == fresh.src);
  CHECK(restored.entry == k->kernel->entry);
  CHECK(restored.cpu_threads == fresh.cpu_threads);
  CHECK(restored.opts_desc == fresh.opts_desc);
  REQUIRE(restored.buffers.size() == fresh.buffers.size());
  for (size_t i = 0; i < fresh.buffers.size(); ++i) {
    CHECK(restored.buffers[i].count == fresh.buffers[i].count);
    CHECK(restored.buffers[i].written == fresh.buffers[i].written);
  }
  CHECK(restored.vars == fresh.vars);
  // A remembered source is what realize compiles: a planted one for a kernel not compiled yet.
  const UOp other = matmul_graph(8);
  const UOp other_ast = create_schedule({other}).items.at(0).ast;
  StoredKernel planted = stored_kernel(codegen(other_ast, target, {.noopt = 1}));
  remember_kernel(ProgramCache::instance(), other_ast, target, 0, {{}, {}, planted});
  CHECK(realized_with(other).second.empty());  // the unoptimized source, not the heuristics'
  // Opts that do not apply (another AST's, under a colliding key) give way to the heuristics.
  const UOp third = matmul_graph(4);
  const UOp third_ast = create_schedule({third}).items.at(0).ast;
  {
    ScopedKnob debug(Knob::DEBUG, "2");  // DEBUG=2 takes opts only, not a whole source
    remember_kernel(ProgramCache::instance(), third_ast, target, 0,
                    {{{OptType::Upcast, 99, 4}}, {}, std::nullopt});
    auto [ast3, opts3] = realized_with(third);
    CHECK(opts3 == codegen(third_ast, target).opts);
  }
  CHECK(remembered_kernel(ProgramCache::instance(), third_ast, target, 0)->opts ==
        codegen(third_ast, target).opts);
  ProgramCache::reset_instance();
}
