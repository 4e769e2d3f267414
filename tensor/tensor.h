// Tensor: the lazy front end. A Tensor is a handle to a node of the tensor graph (uop/shape.h) plus
// a device name; operations build new nodes and nothing runs until realize() (or a read such as
// to_vector) hands the graph to the realize engine (runtime/realize.h). Copies share one state, so
// realizing one copy realizes them all.
//
// Only a few ops are primitive (one graph node each): the elementwise ALU ops, CAST, BITCAST,
// REDUCE_AXIS (ADD, MUL, MAX), the six movement ops, CONTIGUOUS, COPY and ASSIGN. The rest is
// composed as tinygrad does it: a - b = a + (-b), exp(x) = exp2(x * log2(e)), min = -max(-x),
// softmax = exp(x - max) / sum, matmul = (x * w).sum(-1) after reshape/expand.
//
// Broadcasting is numpy's (shapes align on the right; a dim of 1 stretches) and is made explicit
// in the graph with RESHAPE + EXPAND. Dtypes promote with least_upper_dtype; C++ numbers are weak:
// int32 * 2.5 -> float32, float16 + 1.0 -> float16, uint8 + 1 -> uint8.
//
// Integer division: `/` is true division (ints promote to float32, as numpy and tinygrad do);
// idiv() truncates toward zero and mod() takes the dividend's sign (C semantics, the IDIV/MOD
// ops); floordiv() rounds toward negative infinity (Python's //).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "uop/alu.h"
#include "uop/dtype.h"
#include "uop/shape.h"

namespace ugrad {

/// A C++ number used as an operand. It is weak (weakint, weakfloat): it adopts the tensor's dtype
/// unless that cannot hold it (int tensor * 2.5 -> float32). bool stays bool.
struct Number {
  ConstValue value;
  DType dtype;
  Number(bool v) : value(v), dtype(dtypes::bool_) {}  // NOLINT: numbers convert implicitly
  Number(double v) : value(v), dtype(dtypes::weakfloat) {}
  Number(float v) : value(static_cast<double>(v)), dtype(dtypes::weakfloat) {}
  template <typename I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) Number(I v)
      : value(static_cast<int64_t>(v)), dtype(dtypes::weakint) {}
};

/// One axis of a slice, [start, end) with Python semantics: negative values count from the end,
/// both are clamped to the axis, and an end before the start gives an empty axis.
struct SliceArg {
  SliceArg(int64_t start = 0, std::optional<int64_t> end = std::nullopt)  // NOLINT: {start, end}
      : start(start), end(end) {}
  int64_t start;
  std::optional<int64_t> end;  // nullopt: to the end of the axis
};

/// The C++ type that stores one element of a dtype (bool, int8_t, ..., float, double).
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  if constexpr (std::is_same_v<T, int8_t>) return dtypes::int8;
  if constexpr (std::is_same_v<T, int16_t>) return dtypes::int16;
  if constexpr (std::is_same_v<T, int32_t>) return dtypes::int32;
  if constexpr (std::is_same_v<T, int64_t>) return dtypes::int64;
  if constexpr (std::is_same_v<T, uint8_t>) return dtypes::uint8;
  if constexpr (std::is_same_v<T, uint16_t>) return dtypes::uint16;
  if constexpr (std::is_same_v<T, uint32_t>) return dtypes::uint32;
  if constexpr (std::is_same_v<T, uint64_t>) return dtypes::uint64;
  if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  if constexpr (std::is_same_v<T, double>) return dtypes::float64;
  return dtypes::void_;
}

class Tensor {
 public:
  /// An empty handle (no node); most operations on it are errors.
  Tensor() = default;
  /// Wraps a tensor-graph node living on `device` ("" = the default device, DEV).
  Tensor(UOp node, std::string device);

  // ---- creation (creation.cpp, random.cpp) ----
  /// Uninitialised storage of this shape.
  static Tensor empty(const std::vector<int64_t>& shape, DType dtype = dtypes::float32,
                      const std::string& device = "");
  /// Every element `value` (a broadcast CONST: no memory until realized).
  static Tensor full(const std::vector<int64_t>& shape, Number value,
                     std::optional<DType> dtype = std::nullopt, const std::string& device = "");
  static Tensor zeros(const std::vector<int64_t>& shape, DType dtype = dtypes::float32,
                      const std::string& device = "");
  static Tensor ones(const std::vector<int64_t>& shape, DType dtype = dtypes::float32,
                     const std::string& device = "");
  /// A scalar (shape ()) tensor.
  static Tensor scalar(Number value, std::optional<DType> dtype = std::nullopt,
                       const std::string& device = "");
  /// [0, stop) and [start, stop) by step, computed on the host and uploaded.
  static Tensor arange(int64_t stop, DType dtype = dtypes::int32, const std::string& device = "");
  static Tensor arange(double start, double stop, double step = 1, DType dtype = dtypes::float32,
                       const std::string& device = "");
  /// The n x n identity (n x m with m given).
  static Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt,
                    DType dtype = dtypes::float32, const std::string& device = "");
  /// A tensor holding `values` (row-major, converted to `dtype` as CAST does), copied into a new
  /// buffer.
  static Tensor from_doubles(std::span<const double> values, const std::vector<int64_t>& shape,
                             DType dtype, const std::string& device = "");
  static Tensor from_ints(std::span<const int64_t> values, const std::vector<int64_t>& shape,
                          DType dtype, const std::string& device = "");
  /// A tensor holding raw element bytes of `dtype` (row-major).
  static Tensor from_bytes(std::span<const std::byte> bytes, const std::vector<int64_t>& shape,
                           DType dtype, const std::string& device = "");
  /// A tensor over raw element bytes that stay owned elsewhere (a memory-mapped file), kept alive
  /// by `owner`. On a device that reads host memory (CPU) nothing is copied and the tensor is
  /// read-only (assigning into it is an Error); other devices get a copy.
  static Tensor from_host_memory(std::span<const std::byte> bytes,
                                 const std::vector<int64_t>& shape, DType dtype,
                                 const std::string& device, std::shared_ptr<const void> owner);
  /// A tensor from a std::vector (dtype defaults to T's), e.g. from_vector<float>({1, 2}, {2}).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const std::vector<int64_t>& shape,
                            std::optional<DType> dtype = std::nullopt,
                            const std::string& device = "");
  template <typename T>
  static Tensor from_vector(std::initializer_list<T> values, const std::vector<int64_t>& shape,
                            std::optional<DType> dtype = std::nullopt,
                            const std::string& device = "") {
    return from_vector(std::vector<T>(values), shape, dtype, device);
  }

  /// Seeds the generator and restarts its call counter.
  static void manual_seed(uint64_t seed);
  /// Uniform in [0, 1). Philox-4x32-10 of (seed, call counter, element index) computed on the host
  /// and uploaded: the same seed gives the same values on every device.
  static Tensor rand(const std::vector<int64_t>& shape, DType dtype = dtypes::float32,
                     const std::string& device = "");
  /// Standard normal (Box-Muller on the same stream).
  static Tensor randn(const std::vector<int64_t>& shape, DType dtype = dtypes::float32,
                      const std::string& device = "");
  /// Uniform in [low, high).
  static Tensor uniform(const std::vector<int64_t>& shape, double low, double high,
                        DType dtype = dtypes::float32, const std::string& device = "");

  /// A shape () int32 tensor holding the value of a symbolic dim (a variable or an expression of
  /// variables), read when the graph runs. Symbolic dims are made of bound variables:
  /// bind_variable(UOp::variable(name, lo, hi), value) (schedule/schedule.h); a TensorJit takes
  /// them as inputs (docs/design.md#variables).
  static Tensor from_dim(const UOp& dim, const std::string& device = "");

  // ---- properties ----
  bool defined() const { return state_ != nullptr; }
  const UOp& node() const;
  const Shape& shape() const;
  /// The dims, symbolic ones at their bound values; an Error if a dim has an unbound variable.
  std::vector<int64_t> dims() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  /// Size of one axis (negative counts from the end), as dims().
  int64_t size(int64_t axis) const;
  /// Number of elements, as dims().
  int64_t numel() const;
  DType dtype() const { return node().dtype(); }
  const std::string& device() const;

  // ---- realization and reading (tensor.cpp) ----
  /// Computes the tensor now; afterwards every copy of this handle refers to the result buffer.
  Tensor& realize();
  /// Realizes several tensors in one schedule.
  static void realize_all(std::span<Tensor> tensors);
  /// Marks a materialization point (a CONTIGUOUS node).
  Tensor contiguous() const;
  /// Detaches from gradient tracking (a DETACH node; a no-op for values).
  Tensor detach() const;
  /// The same values on another device (a COPY node).
  Tensor to(const std::string& device) const;
  /// True when the node is a realized buffer view (realize() has run).
  bool is_realized() const;
  /// The element bytes, row-major (realizes first).
  std::vector<std::byte> to_bytes() const;
  std::vector<double> to_doubles() const;
  std::vector<int64_t> to_ints() const;
  /// The elements converted to T, row-major.
  template <typename T>
  std::vector<T> to_vector() const;
  /// The only element (an Error unless numel() == 1).
  template <typename T>
  T item() const;
  /// numpy-like text: "Tensor(shape=(2, 2), dtype=float32, device=CPU)\n[[1, 2],\n [3, 4]]".
  std::string to_string() const;

  /// Writes `value` (broadcast and cast to this view) into the buffer under this view, which must
  /// be a realized tensor or a slice/reshape of one. Lazy: the returned tensor is the ASSIGN node;
  /// realize() it to perform the write.
  Tensor assign(const Tensor& value) const;
  Tensor assign(Number value) const;

  // ---- elementwise (elementwise.cpp) ----
  Tensor neg() const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor silu() const;
  /// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  Tensor gelu() const;
  Tensor relu() const;
  Tensor abs() const;
  Tensor square() const;
  Tensor trunc() const;
  /// -1, 0 or 1.
  Tensor sign() const;
  /// Bool: logical not; ints: bitwise not.
  Tensor logical_not() const;
  Tensor bitwise_not() const;
  /// min(max(x, lo), hi).
  Tensor clip(Number lo, Number hi) const;
  /// x ** e. Floats: exp2(e log2|x|) with the sign of odd integer exponents (nan for a negative
  /// base and a fractional exponent); ints: a non-negative integer exponent by repeated squaring.
  Tensor pow(const Tensor& e) const;
  Tensor pow(Number e) const;
  /// Element conversion (a CAST node), as uop/alu.h defines it.
  Tensor cast(DType dtype) const;
  /// Reinterprets the bits (same item size).
  Tensor bitcast(DType dtype) const;
  Tensor lt(const Tensor& b) const;
  Tensor le(const Tensor& b) const;
  Tensor gt(const Tensor& b) const;
  Tensor ge(const Tensor& b) const;
  Tensor eq(const Tensor& b) const;
  Tensor ne(const Tensor& b) const;
  Tensor lt(Number b) const;
  Tensor le(Number b) const;
  Tensor gt(Number b) const;
  Tensor ge(Number b) const;
  Tensor eq(Number b) const;
  Tensor ne(Number b) const;
  /// cond ? a : b elementwise, with this tensor as the condition (cast to bool).
  Tensor where(const Tensor& a, const Tensor& b) const;
  Tensor where(const Tensor& a, Number b) const;
  Tensor where(Number a, const Tensor& b) const;
  Tensor where(Number a, Number b) const;

  // ---- reductions (reduce.cpp); axes may be negative; no axes = all ----
  /// Sum; small ints and bool accumulate in int32 (and return it), halves in float32 (cast back).
  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  /// Mean; ints give float32.
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  /// Variance with Bessel-style `correction` (1: sample variance, 0: population).
  Tensor var(std::vector<int64_t> axes = {}, bool keepdim = false, int64_t correction = 1) const;
  Tensor std(std::vector<int64_t> axes = {}, bool keepdim = false, int64_t correction = 1) const;
  /// Index of the first maximum along `axis` (int32); no axis: of the flattened tensor.
  Tensor argmax(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> axis = std::nullopt, bool keepdim = false) const;
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;
  Tensor logsumexp(int64_t axis = -1, bool keepdim = false) const;
  /// Inclusive prefix sum along `axis`.
  Tensor cumsum(int64_t axis = 0) const;

  // ---- movement (movement.cpp) ----
  /// New dims with the same element count; one dim may be -1.
  Tensor reshape(const std::vector<int64_t>& shape) const;
  /// Reshape to (possibly symbolic) dims.
  Tensor reshape_to(const Shape& shape) const;
  /// Dims reordered: result axis i is input axis order[i].
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  /// Broadcast to `shape` (numpy rules; new dims on the left; -1 keeps a dim).
  Tensor expand(const std::vector<int64_t>& shape) const;
  /// Broadcast to (possibly symbolic) dims.
  Tensor expand_to(const Shape& shape) const;
  /// Pads each axis with {before, after} elements of `value`.
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& pads, Number value = 0) const;
  /// Keeps [start, end) of each axis (no bounds adjustment; an Error when out of range).
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& ranges) const;
  /// Keeps [start, end) of each axis where the bounds may be symbolic (index UOps over variables,
  /// e.g. [start_pos, start_pos + T)); static bounds are range-checked.
  Tensor shrink_to(const std::vector<std::pair<UOp, UOp>>& ranges) const;
  /// Pads each axis with {before, after} zeros, counts possibly symbolic.
  Tensor pad_to(const std::vector<std::pair<UOp, UOp>>& pads) const;
  /// Python-style slicing; missing trailing axes are kept whole.
  Tensor slice(const std::vector<SliceArg>& ranges) const;
  Tensor flip(std::vector<int64_t> axes) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  /// Removes axes of size 1 (all of them when `axes` is empty).
  Tensor squeeze(std::vector<int64_t> axes = {}) const;
  Tensor unsqueeze(int64_t axis) const;
  /// Tiles the tensor `repeats[i]` times along each axis (numpy tile / torch repeat).
  Tensor repeat(const std::vector<int64_t>& repeats) const;
  /// Each element repeated `n` times along `axis`.
  Tensor repeat_interleave(int64_t n, int64_t axis) const;

  // ---- indexing (indexing.cpp) ----
  /// out[..i..] = x[..index[..i..]..] along `axis` (torch.gather); index has x's rank.
  Tensor gather(int64_t axis, const Tensor& index) const;
  /// The slices at the (1-D) `index` along `axis`.
  Tensor index_select(int64_t axis, const Tensor& index) const;
  /// Rows of this (vocab, dim) table for int `ids` of any shape: shape ids.shape + (dim,).
  Tensor embedding(const Tensor& ids) const;
  /// (x[..., None] == arange(num_classes)) as int32.
  Tensor one_hot(int64_t num_classes) const;
  /// Keeps the upper (lower) triangle of the last two axes, above (below) diagonal k.
  Tensor triu(int64_t k = 0) const;
  Tensor tril(int64_t k = 0) const;

  // ---- gradients (autograd.cpp; the rules: gradient.h) ----
  /// Marks this float tensor as a leaf whose gradient backward() accumulates into grad(). An
  /// unrealized tensor is realized first (a leaf is a buffer of its own).
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  /// Reverse mode: adds d(this)/d(leaf), times `grad` (this tensor's shape; a scalar may omit it
  /// for 1), to grad() of every requires-grad tensor this one depends on. Lazy: the gradients are
  /// graphs, computed when read or realized. An Error when nothing requires grad along the way,
  /// inside a NoGradScope, or for a non-float tensor.
  void backward(const Tensor& grad = Tensor()) const;
  /// The accumulated gradient, this tensor's shape and dtype (an empty handle before backward()).
  Tensor grad() const;
  /// Replaces the accumulated gradient (an empty handle clears it: zero_grad).
  void set_grad(const Tensor& grad);

  // ---- matmul (matmul.cpp) ----
  /// numpy matmul: 1-D operands are vectors, leading dims broadcast.
  Tensor matmul(const Tensor& w) const;
  Tensor dot(const Tensor& w) const { return matmul(w); }
  /// x @ weight^T (+ bias unless it is an empty handle); weight is (out, in).
  Tensor linear(const Tensor& weight, const Tensor& bias = Tensor()) const;

 private:
  struct State {
    UOp node;
    std::string device;
    bool requires_grad = false;
    std::shared_ptr<Tensor> grad;  // accumulated by backward()
    UOp lazy;      // the graph before realize(), kept while a tensor requires grad (backward)
    UOp detached;  // node() inside a NoGradScope for a requires-grad tensor
  };
  /// The node itself, never detached (what realize, assign and reads use).
  const UOp& raw_node() const;
  /// The live tensors that require grad.
  static std::vector<std::weak_ptr<State>>& grad_leaves();
  std::shared_ptr<State> state_;
};

/// While one lives (on this thread), requires-grad tensors read as detached: what is computed
/// from them carries no gradient (an optimizer's update, an evaluation), and backward() is an
/// Error.
class NoGradScope {
 public:
  NoGradScope();
  ~NoGradScope();
  NoGradScope(const NoGradScope&) = delete;
  NoGradScope& operator=(const NoGradScope&) = delete;
  static bool active();
};

// ---- binary ops with broadcasting and promotion (elementwise.cpp) ----
#define UGRAD_TENSOR_BINARY(name)                \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, Number b);        \
  Tensor name(Number a, const Tensor& b);
UGRAD_TENSOR_BINARY(operator+)
UGRAD_TENSOR_BINARY(operator-)
UGRAD_TENSOR_BINARY(operator*)
UGRAD_TENSOR_BINARY(operator/)
UGRAD_TENSOR_BINARY(operator<)
UGRAD_TENSOR_BINARY(operator<=)
UGRAD_TENSOR_BINARY(operator>)
UGRAD_TENSOR_BINARY(operator>=)
UGRAD_TENSOR_BINARY(operator&)
UGRAD_TENSOR_BINARY(operator|)
UGRAD_TENSOR_BINARY(operator^)
/// Elementwise max / min (NaN propagates).
UGRAD_TENSOR_BINARY(maximum)
UGRAD_TENSOR_BINARY(minimum)
/// Integer division truncating toward zero, remainder with the dividend's sign (C).
UGRAD_TENSOR_BINARY(idiv)
UGRAD_TENSOR_BINARY(mod)
/// Integer division rounding toward negative infinity (Python //).
UGRAD_TENSOR_BINARY(floordiv)
UGRAD_TENSOR_BINARY(pow)
#undef UGRAD_TENSOR_BINARY
/// Per element, the 4 bytes of a (unsigned) times the 4 bytes of b (signed), summed (an int8 dot
/// product: x86 vpdpbusd, AMD v_dot4). a and b are int32 or uint32 words; the result is int32.
Tensor dot4(const Tensor& a, const Tensor& b);
/// Per element, each of the 4 bytes of the int32 or uint32 word w replaced by table[byte & 15]
/// (x86 vpshufb): the weights of an int8 dot product whose levels are a 16-entry table.
Tensor byte_lut(const Tensor& w, std::span<const uint8_t, 16> table);
Tensor operator-(const Tensor& a);
/// cond ? a : b with broadcasting.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, Number b);
Tensor where(const Tensor& cond, Number a, const Tensor& b);
/// Joins tensors along an existing axis / a new axis.
Tensor cat(const std::vector<Tensor>& tensors, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis = 0);
/// The shape both shapes broadcast to (numpy rules); an Error naming `op` and both shapes.
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op);

// ---- template definitions ----
template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const std::vector<int64_t>& shape,
                           std::optional<DType> dtype, const std::string& device) {
  static_assert(std::is_arithmetic_v<T>, "from_vector: T must be a number type");
  DType t = dtype.value_or(dtype_of<T>() == dtypes::void_ ? dtypes::float32 : dtype_of<T>());
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> v(values.begin(), values.end());
    return from_doubles(v, shape, t, device);
  } else {
    std::vector<int64_t> v;
    v.reserve(values.size());
    for (T x : values) v.push_back(static_cast<int64_t>(x));
    return from_ints(v, shape, t, device);
  }
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  static_assert(std::is_arithmetic_v<T>, "to_vector: T must be a number type");
  std::vector<T> out;
  if constexpr (std::is_floating_point_v<T>) {
    for (double x : to_doubles()) out.push_back(static_cast<T>(x));
  } else if constexpr (std::is_same_v<T, bool>) {
    for (int64_t x : to_ints()) out.push_back(x != 0);
  } else {
    if (is_float(dtype())) {
      for (double x : to_doubles()) out.push_back(static_cast<T>(x));
    } else {
      for (int64_t x : to_ints()) out.push_back(static_cast<T>(x));
    }
  }
  return out;
}

namespace detail {
[[noreturn]] void item_size_error(const Shape& shape);
}

template <typename T>
T Tensor::item() const {
  std::vector<T> v = to_vector<T>();
  if (v.size() != 1) detail::item_size_error(shape());
  return v[0];
}

}  // namespace ugrad
