// The naive scalar reference the op table is checked against: row-major arrays of doubles with
// plain loops in numpy semantics. It shares no code with ugrad (ints are exact up to 2^53, which
// the test ranges respect).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace ref {

struct Array {
  std::vector<int64_t> dims;
  std::vector<double> v;
  int64_t numel() const;
};

using Unary = std::function<double(double)>;
using Binary = std::function<double(double, double)>;

/// Row-major strides of dims.
std::vector<int64_t> strides(const std::vector<int64_t>& dims);
/// Coordinates of flat index i.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& dims);

Array map(const Array& a, const Unary& f);
/// f over numpy-broadcast operands.
Array zip(const Array& a, const Array& b, const Binary& f);
Array where(const Array& c, const Array& a, const Array& b);
/// Axes: negative count from the end; empty = all.
std::vector<int64_t> axes_of(std::vector<int64_t> axes, size_t ndim);
/// Folds f over the axes starting at init.
Array reduce(const Array& a, std::vector<int64_t> axes, bool keepdim, double init, const Binary& f);
Array mean(const Array& a, std::vector<int64_t> axes, bool keepdim);
Array var(const Array& a, std::vector<int64_t> axes, bool keepdim, int64_t correction);
/// Index of the first max (min) along axis.
Array argmax(const Array& a, int64_t axis, bool keepdim, bool min = false);
Array softmax(const Array& a, int64_t axis, bool log);
Array logsumexp(const Array& a, int64_t axis, bool keepdim);
Array cumsum(const Array& a, int64_t axis);

Array reshape(const Array& a, std::vector<int64_t> dims);
Array permute(const Array& a, const std::vector<int64_t>& order);
Array expand(const Array& a, const std::vector<int64_t>& dims);
Array pad(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& pads, double value);
Array shrink(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& ranges);
Array flip(const Array& a, const std::vector<int64_t>& axes);
Array cat(const std::vector<Array>& parts, int64_t axis);
Array repeat(const Array& a, const std::vector<int64_t>& reps);
/// torch.gather along axis.
Array gather(const Array& a, int64_t axis, const Array& index);
Array triangle(const Array& a, int64_t k, bool upper);
Array matmul(const Array& a, const Array& b);

}  // namespace ref
