// The heuristics' choice remembered across processes (runtime/opts_memo.h): the entry format, its
// key, and realize() using it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "base/env.h"
#include "codegen/codegen.h"
#include "runtime/device.h"
#include "runtime/jit.h"
#include "runtime/opts_memo.h"
#include "runtime/realize.h"
#include "schedule/schedule.h"
#include "test/graph_helpers.h"

using namespace ugrad;
using namespace ugrad::test;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path =
      fs::temp_directory_path() / ("ugrad_test_opts_memo_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(path); }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const ChosenOpts kChoice{
    {{OptType::Unroll, 1, 16}, {OptType::Upcast, 0, 8}, {OptType::Thread, 0, 2}},
    {{GpuOptType::GroupReduce, 1, 256}}};

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

TEST_CASE("opts entries round-trip, and damaged ones are not read") {
  CHECK(parse_opts(serialize_opts(kChoice)) == kChoice);
  CHECK(parse_opts(serialize_opts({})) == ChosenOpts{});
  CHECK(!parse_opts("opts v2\n"));
  CHECK(!parse_opts(""));
  CHECK(!parse_opts("opts v1\no 1 2\n"));      // a field missing
  CHECK(!parse_opts("opts v1\no 1 2 3 4\n"));  // one too many
  CHECK(!parse_opts("opts v1\nx 1 2 3\n"));    // an unknown kind
  CHECK(!parse_opts("opts v1\no 99 2 3\n"));   // an unknown opt type
  CHECK(!parse_opts("opts v1\ng -1 2 3\n"));
}

TEST_CASE("a choice is remembered per AST, target and thread limit, on disk for later processes") {
  TempDir dir;
  const CodegenTarget cpu = cpu_codegen_target();
  CodegenTarget wider = cpu;
  wider.simd_bytes *= 2;
  const UOp a = matmul_graph(), b = matmul_graph(8);
  {
    ProgramCache cache(dir.path);
    CHECK(!remembered_opts(cache, a, cpu, 0));
    remember_opts(cache, a, cpu, 0, kChoice);
    CHECK(remembered_opts(cache, a, cpu, 0) == kChoice);
    CHECK(!remembered_opts(cache, b, cpu, 0));
    CHECK(!remembered_opts(cache, a, wider, 0));
    CHECK(!remembered_opts(cache, a, cpu, 1));
  }
  ProgramCache later(dir.path);  // a new process's cache over the same folder
  CHECK(remembered_opts(later, a, cpu, 0) == kChoice);
  CHECK(later.stats().disk_hits == 1);
}

TEST_CASE("realize remembers the heuristics' choice and compiles with a remembered one") {
  TempDir dir;
  ScopedKnob where(Knob::CACHE_DIR, dir.path.string());
  ProgramCache::reset_instance();
  const CodegenTarget& target = get_device("CPU").target();
  // First sight: the heuristics choose, and the choice is remembered.
  const UOp graph = matmul_graph();
  auto [ast, opts] = realized_with(graph);
  CHECK(!opts.empty());
  CHECK(opts == codegen(ast, target).opts);
  CHECK(remembered_opts(ProgramCache::instance(), ast, target, 0) == ChosenOpts{opts, {}});
  // A choice remembered for a kernel not compiled yet is the one applied (here: none at all).
  const UOp other = matmul_graph(8);
  const UOp other_ast = create_schedule({other}).items.at(0).ast;
  remember_opts(ProgramCache::instance(), other_ast, target, 0, {});
  CHECK(realized_with(other).second.empty());
  // One that does not apply (another AST's, under a colliding hash) gives way to the heuristics.
  const UOp third = matmul_graph(4);
  const UOp third_ast = create_schedule({third}).items.at(0).ast;
  remember_opts(ProgramCache::instance(), third_ast, target, 0, {{{OptType::Upcast, 99, 4}}, {}});
  auto [ast3, opts3] = realized_with(third);
  CHECK(opts3 == codegen(third_ast, target).opts);
  CHECK(remembered_opts(ProgramCache::instance(), third_ast, target, 0) == ChosenOpts{opts3, {}});
  ProgramCache::reset_instance();
}
