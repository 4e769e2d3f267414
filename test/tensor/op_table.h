// The op table: one list of op cases, each an ugrad computation and a naive reference
// (reference.h) over the same random inputs, with a tolerance per output dtype. Inputs come in
// several layouts (permuted, padded, shrunk, flipped, expanded views), so every op also sees
// non-contiguous sources. Device selection is external: run_op_case uses the device it is given
// ("" = the DEV knob), so the same table runs on CPU, NULL:gfx1100 or AMD.
#pragma once
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "reference.h"
#include "tensor/tensor.h"

namespace optable {

/// How an input tensor is built from its values: directly, or as a view of other storage.
enum class Layout { Contiguous, Permuted, Padded, Shrunk, Flipped, Expanded };
const char* layout_name(Layout l);

/// One input: its logical dims and dtype, the layout, and the range its random values come from.
struct InputSpec {
  std::vector<int64_t> dims;
  ugrad::DType dtype = ugrad::dtypes::float32;
  Layout layout = Layout::Contiguous;
  double lo = -3, hi = 3;
  bool integral = false;  // float inputs hold whole numbers (comparisons, exact ops)
};

struct Tolerance {
  double rtol = 0, atol = 0;
};

struct OpCase {
  std::string name;  // unique, e.g. "exp/float16/permuted(3, 4)"
  std::vector<InputSpec> inputs;
  std::function<ugrad::Tensor(const std::vector<ugrad::Tensor>&)> op;
  std::function<ref::Array(const std::vector<ref::Array>&)> ref;
  std::optional<ugrad::DType> out_dtype;  // checked when set
  std::optional<Tolerance> tol;           // default: by the output dtype
};

/// An input as the storage a layout views, for gradient checks: the storage's values, the view
/// that makes the input from the storage tensor, and the input's logical values.
struct InputStorage {
  ref::Array storage;
  std::function<ugrad::Tensor(const ugrad::Tensor&)> view;
  ref::Array values;
};
/// The storage and view of one input, drawing its values from `rng` as run_op_case does.
InputStorage input_storage(const InputSpec& s, std::mt19937_64& rng);
/// The seed run_op_case draws a case's inputs from.
uint64_t case_seed(const OpCase& c);

/// Every case.
const std::vector<OpCase>& op_table();
/// The case with this name, or nullptr.
const OpCase* find_case(const std::string& name);

struct CaseResult {
  bool ok = false;
  std::string detail;  // the first mismatch, or the error thrown
  ugrad::Tensor output;
};
/// Builds the inputs on `device`, runs the case and compares with the reference. On a NULL device
/// (compile only) the output is realized and not compared.
CaseResult run_op_case(const OpCase& c, const std::string& device = "");
/// Default tolerance for an output dtype.
Tolerance tolerance_for(ugrad::DType t);

}  // namespace optable
