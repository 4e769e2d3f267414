// Helpers for writing op-table cases: dtype shorthands, input specs and the case list with its
// naming scheme ("op/dtype/layout(dims)|...").
#pragma once
#include <fmt/format.h>

#include "op_table.h"

namespace optable {

using namespace ugrad;
using T = Tensor;
using A = ref::Array;
using TV = std::vector<Tensor>;
using AV = std::vector<ref::Array>;
using Dims = std::vector<int64_t>;
using L = Layout;

inline constexpr DType f64 = dtypes::float64, f32 = dtypes::float32, f16 = dtypes::float16,
                       bf16 = dtypes::bfloat16, i64 = dtypes::int64, i32 = dtypes::int32,
                       i8 = dtypes::int8, u8 = dtypes::uint8, b8 = dtypes::bool_;
inline const L kLayouts[] = {L::Contiguous, L::Permuted, L::Padded,
                             L::Shrunk,     L::Flipped,  L::Expanded};

inline std::string dims_text(const Dims& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(d[i]);
  }
  return s + ")";
}
inline std::string input_text(const std::vector<InputSpec>& in) {
  std::string s;
  for (const InputSpec& x : in)
    s += fmt::format("{}{}{}", s.empty() ? "" : "|",
                     x.layout == L::Contiguous ? "" : layout_name(x.layout), dims_text(x.dims));
  return s;
}

struct Table {
  std::vector<OpCase> cases;
  int layout_cycle = 0;
  L next_layout() { return kLayouts[layout_cycle++ % 6]; }

  void add(const std::string& op, const std::string& dtype_name, std::vector<InputSpec> in,
           std::function<T(const TV&)> f, std::function<A(const AV&)> r,
           std::optional<DType> out = std::nullopt, std::optional<Tolerance> tol = std::nullopt) {
    std::string name = fmt::format("{}/{}/{}", op, dtype_name, input_text(in));
    for (int k = 2; find(name); ++k)
      name = fmt::format("{}/{}/{}#{}", op, dtype_name, input_text(in), k);
    cases.push_back({name, std::move(in), std::move(f), std::move(r), out, tol});
  }
  bool find(const std::string& n) const {
    for (const OpCase& c : cases)
      if (c.name == n) return true;
    return false;
  }
};

inline InputSpec in(Dims d, DType t, L l = L::Contiguous, double lo = -3, double hi = 3,
                    bool integral = false) {
  return {std::move(d), t, l, lo, hi, integral};
}

void add_reduce_cases(Table& t);
void add_movement_cases(Table& t);

}  // namespace optable
