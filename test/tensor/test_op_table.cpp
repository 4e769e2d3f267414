// Runs the op table on the default device (DEV). UGRAD_OP_CASE=<substring> runs only the cases
// whose names contain it. Cases are grouped by op name (the text before the first '/').
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "op_table.h"

using namespace optable;

namespace {

struct Group {
  const char* name;
  std::vector<std::string> ops;
};

const Group kGroups[] = {
    {"unary", {"neg",        "exp",         "exp2",        "log",     "log2",    "sqrt", "rsqrt",
               "reciprocal", "sin",         "cos",         "tanh",    "sigmoid", "silu", "gelu",
               "relu",       "abs",         "square",      "trunc",   "sign",    "clip", "pow_int",
               "pow_frac",   "bitwise_not", "logical_not", "byte_lut"}},
    {"binary",
     {"add",
      "add_mixed",
      "add_number",
      "sub",
      "mul",
      "mul_number",
      "div",
      "div_number",
      "div_int",
      "rsub_number",
      "maximum",
      "minimum",
      "pow",
      "pow_negbase",
      "lt",
      "le",
      "gt",
      "ge",
      "eq",
      "ne",
      "dot4",
      "idiv",
      "idiv_negdivisor",
      "mod",
      "floordiv",
      "floordiv_negdivisor",
      "and",
      "or",
      "xor",
      "where",
      "where_number"}},
    {"reductions",
     {"sum", "prod", "max", "min", "mean", "var", "var_population", "std", "argmax", "argmin",
      "softmax", "log_softmax", "logsumexp", "cumsum"}},
    {"movement",
     {"reshape", "permute", "transpose", "expand", "pad", "pad_value", "shrink", "slice", "flip",
      "cat", "stack", "squeeze", "unsqueeze", "flatten", "repeat", "repeat_interleave", "triu",
      "tril"}},
    {"indexing", {"gather", "index_select", "embedding", "one_hot"}},
    {"matmul", {"matmul", "linear"}},
    {"creation and casts",
     {"full", "full_plus_input", "zeros", "ones", "arange", "eye", "cast", "bitcast"}},
};

std::string op_of(const OpCase& c) { return c.name.substr(0, c.name.find('/')); }

bool selected(const OpCase& c) {
  const char* filter = std::getenv("UGRAD_OP_CASE");
  return !filter || c.name.find(filter) != std::string::npos;
}

void run_group(const char* name) {
  for (const Group& g : kGroups) {
    if (std::string(g.name) != name) continue;
    std::set<std::string> ops(g.ops.begin(), g.ops.end());
    int run = 0, failed = 0;
    for (const OpCase& c : op_table()) {
      if (!ops.count(op_of(c)) || !selected(c)) continue;
      ++run;
      CaseResult r = run_op_case(c);
      failed += !r.ok;
      CHECK_MESSAGE(r.ok, c.name << ": " << r.detail);
    }
    MESSAGE(std::string(name) << ": " << run - failed << " of " << run << " cases pass");
  }
}

}  // namespace

TEST_CASE("op table: names are unique, every op has cases, groups cover each case once") {
  std::set<std::string> names;
  std::map<std::string, int> groups_of;
  for (const Group& g : kGroups)
    for (const std::string& op : g.ops) groups_of[op]++;
  std::set<std::string> seen;
  for (const OpCase& c : op_table()) {
    CHECK_MESSAGE(names.insert(c.name).second, "duplicate case " << c.name);
    CHECK_MESSAGE(groups_of[op_of(c)] == 1,
                  c.name << " is in " << groups_of[op_of(c)] << " groups");
    seen.insert(op_of(c));
  }
  for (const auto& entry : groups_of)
    CHECK_MESSAGE(seen.count(entry.first), "no case for " << entry.first);
  CHECK(op_table().size() > 400);
}

TEST_CASE("op table: unary") { run_group("unary"); }
TEST_CASE("op table: binary") { run_group("binary"); }
TEST_CASE("op table: reductions") { run_group("reductions"); }
TEST_CASE("op table: movement") { run_group("movement"); }
TEST_CASE("op table: indexing") { run_group("indexing"); }
TEST_CASE("op table: matmul") { run_group("matmul"); }
TEST_CASE("op table: creation and casts") { run_group("creation and casts"); }
