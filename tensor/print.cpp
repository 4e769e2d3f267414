// to_string: a numpy-like rendering. Long axes show their first and last kElided values.
#include <cmath>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

constexpr int64_t kSummarizeAbove = 1000;  // elements; larger tensors elide long axes
constexpr int64_t kElided = 3;             // values kept at each end of an elided axis

struct Printer {
  const std::vector<int64_t>& dims;
  std::vector<std::string> cells;  // formatted elements, row-major
  bool summarize;

  void axis(std::string& out, size_t ax, int64_t offset, int64_t stride_prod, int indent) const {
    if (ax == dims.size()) {
      out += cells[offset];
      return;
    }
    int64_t n = dims[ax], inner = stride_prod / std::max<int64_t>(n, 1);
    out += '[';
    for (int64_t i = 0; i < n; ++i) {
      if (summarize && n > 2 * kElided && i == kElided) {
        out += "...,";
        if (ax + 1 == dims.size())
          out += ' ';
        else
          out.append("\n").append(indent + 1, ' ');
        i = n - kElided;
      }
      axis(out, ax + 1, offset + i * inner, inner, indent + 1);
      if (i + 1 < n) {
        if (ax + 1 == dims.size())
          out += ", ";
        else
          out.append(",").append(dims.size() - ax - 1, '\n').append(indent + 1, ' ');
      }
    }
    out += ']';
  }
};

std::string format_value(double v, DType t) {
  if (is_bool(t)) return v != 0 ? "true" : "false";
  if (!is_float(t)) return fmt::format("{}", static_cast<int64_t>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

}  // namespace

std::string Tensor::to_string() const {
  std::string head = fmt::format("Tensor(shape={}, dtype={}, device={})", shape_str(shape()),
                                 ugrad::to_string(dtype()), device());
  std::vector<int64_t> d = dims();
  int64_t n = numel();
  Printer p{d, {}, n > kSummarizeAbove};
  if (dtype() == dtypes::int64 || dtype() == dtypes::uint64) {
    for (int64_t v : to_ints())
      p.cells.push_back(dtype() == dtypes::uint64 ? fmt::format("{}", static_cast<uint64_t>(v))
                                                  : fmt::format("{}", v));
  } else {
    for (double v : to_doubles()) p.cells.push_back(format_value(v, dtype()));
  }
  std::string body;
  p.axis(body, 0, 0, n, 0);
  return head + "\n" + body;
}

}  // namespace ugrad
