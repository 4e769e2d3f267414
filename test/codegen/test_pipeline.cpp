// The codegen pipeline as a table of named passes: what DEBUG=3 prints and PRINT_AFTER dumps.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/env.h"
#include "codegen/codegen.h"
#include "kernel_harness.h"
#include "test/capture_stderr.h"

using namespace ugrad;
using namespace ugrad::test;

namespace {

// out[i] = sum_j a[i, j] * 2 over (4, 16): a reduce, so every CPU pass has work.
UOp row_sums() {
  UOp out = buf(0, dtypes::float32, 4), a = buf(1, dtypes::float32, 64);
  UOp i = UOp::range(4, 0), j = UOp::range(16, 1, AxisType::Reduce);
  UOp sum = UOp::make(Op::REDUCE, dtypes::float32,
                      {load(a, i * 16 + j) * UOp::cnst(dtypes::float32, 2), j}, Op::ADD);
  return sink({store(out, i, sum)});
}

bool has(const std::vector<std::string>& names, const std::string& n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

}  // namespace

TEST_CASE("the pass table names every pass codegen runs, per target") {
  const std::vector<std::string> cpu = codegen_pass_names(cpu_codegen_target());
  const std::vector<std::string> gpu = codegen_pass_names(amd_codegen_target("gfx1100"));
  // gather_load was missing from the hand-typed list this table replaced
  CHECK(cpu.front() == "gather_load");
  CHECK(cpu.back() == "render_llvm");
  for (const char* n : {"gpu_opt", "gpu_dims", "fuse_accumulators", "lower_index", "gpu_guard"}) {
    CHECK_MESSAGE(!has(cpu, n), n);
    CHECK_MESSAGE(has(gpu, n), n);
  }
  CHECK(has(cpu, "cpu_workgroups"));
  CHECK(!has(gpu, "cpu_workgroups"));
  for (const char* n : {"opt", "expand", "lower_reduce", "decomp", "linearize"}) {
    CHECK_MESSAGE(has(cpu, n), n);
    CHECK_MESSAGE(has(gpu, n), n);
  }
}

// docs/design.md's table of passes ("| # | name: what | folder | CPU | GPU | form |") is the map a
// reader trusts: its rows, in order, are the passes codegen runs on each target.
TEST_CASE("docs/design.md's pass table is the pass list of each target") {
  std::ifstream in(std::string(UGRAD_SOURCE_DIR) + "/docs/design.md");
  REQUIRE(in);
  std::vector<std::string> cpu, gpu;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream row(line);
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    // A pass row: "", number, "name: what", folder, CPU mark, GPU mark, form.
    if (cells.size() < 7 || cells[1].find_first_not_of(" 0123456789") != std::string::npos ||
        cells[1].find_first_of("0123456789") == std::string::npos)
      continue;
    const std::string name = cells[2].substr(1, cells[2].find(':') - 1);
    if (cells[4].find("✓") != std::string::npos) cpu.push_back(name);
    if (cells[5].find("✓") != std::string::npos) gpu.push_back(name);
  }
  CHECK(cpu == codegen_pass_names(cpu_codegen_target()));
  CHECK(gpu == codegen_pass_names(amd_codegen_target("gfx1100")));
}

TEST_CASE("DEBUG=3 names each kernel with its structural hash, and the passes from the table") {
  ScopedKnob debug(Knob::DEBUG, "3");
  KernelSource ks;
  std::string out = capture_stdout([&] { ks = codegen(row_sums(), cpu_codegen_target()); });
  CHECK(out.find(fmt::format("codegen {} {:016x}: opts [", ks.name, row_sums().hash())) !=
        std::string::npos);
  std::string want = "  passes:";
  for (const std::string& n : codegen_pass_names(cpu_codegen_target())) want += " " + n;
  CHECK(out.find(want + "\n") != std::string::npos);
}

TEST_CASE("PRINT_AFTER prints the kernel graph after the named pass, or after every pass") {
  {
    ScopedKnob after(Knob::PRINT_AFTER, "lower_reduce");
    std::string out = capture_stdout([] { codegen(row_sums(), cpu_codegen_target()); });
    CHECK(out.find(" after lower_reduce:\n") != std::string::npos);
    CHECK(out.find(" after expand:") == std::string::npos);
    // lower_reduce made the accumulator explicit; the graph before it has a REDUCE instead
    CHECK(out.find("DEFINE_REG") != std::string::npos);
  }
  {
    ScopedKnob after(Knob::PRINT_AFTER, "all");
    std::string out = capture_stdout([] { codegen(row_sums(), cpu_codegen_target()); });
    for (const std::string& n : codegen_pass_names(cpu_codegen_target()))
      if (n != "linearize" && n != "render_llvm")
        CHECK_MESSAGE(out.find(" after " + n + ":\n") != std::string::npos, n);
  }
  {
    ScopedKnob after(Knob::PRINT_AFTER, "");
    CHECK(capture_stdout([] { codegen(row_sums(), cpu_codegen_target()); }).empty());
  }
}
