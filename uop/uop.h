// UOp: the one IR node. Immutable and interned: identical (op, dtype, src, arg) is the same object,
// so pointer equality is structural equality. Every node carries a structural hash that is stable
// across processes. Graph walks (toposort, printing, destruction) are iterative, so very deep
// graphs are safe.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include "uop/dtype.h"
#include "uop/ops.h"

namespace ugrad {

/// Kind of a loop range; codegen turns ranges into loops, GPU dims, unrolls and vector lanes.
enum class AxisType : uint8_t { Loop, Global, Local, Reduce, GroupReduce, Upcast, Unroll, Thread };
std::string_view axis_type_name(AxisType t);

/// PARAM: a kernel parameter (slot >= 0: buffer pointer or scalar, numbered in the signature) or a
/// symbolic variable (a name and an inclusive range [lo, hi]).
struct ParamArg {
  int64_t slot = -1;
  std::string name;
  int64_t lo = 0, hi = 0;
  friend bool operator==(const ParamArg&, const ParamArg&) = default;
};
/// BUFFER: tensor-graph storage, `size` elements on `device`; `id` tells buffers apart.
struct BufferArg {
  int64_t id = 0;
  int64_t size = 0;
  std::string device;
  friend bool operator==(const BufferArg&, const BufferArg&) = default;
};
/// RANGE: loop `axis` (unique within a kernel) and its kind.
struct RangeArg {
  int64_t axis = 0;
  AxisType type = AxisType::Loop;
  friend bool operator==(const RangeArg&, const RangeArg&) = default;
};
/// REDUCE_AXIS: the combining op (ADD, MUL, MAX) and the reduced axes.
struct ReduceArg {
  Op op = Op::ADD;
  std::vector<int64_t> axes;
  friend bool operator==(const ReduceArg&, const ReduceArg&) = default;
};

/// DOT4: whether each source word's 4 bytes are signed (int8) or unsigned (uint8). x86 VNNI
/// (vpdpbusd) has unsigned a times signed b; AMD v_dot4_i32_iu8 any combination.
struct Dot4Arg {
  bool a_signed = false;
  bool b_signed = false;
  friend bool operator==(const Dot4Arg&, const Dot4Arg&) = default;
};

/// The op-specific payload. Doubles compare bitwise (so -0.0 != 0.0 and NaN == NaN).
using Arg = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                         Op, ParamArg, BufferArg, RangeArg, ReduceArg, Dot4Arg>;
bool arg_equal(const Arg& a, const Arg& b);
uint64_t arg_hash(const Arg& a);
std::string arg_to_string(const Arg& a);

struct UOpNode;
[[noreturn]] void throw_bad_arg_access();

/// A reference to an interned node. Cheap to copy; `==` compares identity, which is structure.
class UOp {
 public:
  UOp() = default;
  UOp(const UOp& o) noexcept;
  UOp(UOp&& o) noexcept : n_(o.n_) { o.n_ = nullptr; }
  UOp& operator=(const UOp& o) noexcept;
  UOp& operator=(UOp&& o) noexcept;
  ~UOp();

  /// The unique node (op, dtype, src, arg). Checks arity against the op table.
  static UOp make(Op op, DType dtype, std::vector<UOp> src = {}, Arg arg = {});
  /// A constant of `dtype` (an int64 payload for ints and index, double for floats, bool for bool).
  static UOp cnst(DType dtype, double value);
  static UOp cnst_int(DType dtype, int64_t value);
  static UOp cnst_bool(bool value);
  /// An index-typed symbolic variable named `name` with inclusive range [lo, hi].
  static UOp variable(std::string name, int64_t lo, int64_t hi);
  /// A loop index in [0, end) for `axis`.
  static UOp range(UOp end, int64_t axis, AxisType type = AxisType::Loop);
  static UOp range(int64_t end, int64_t axis, AxisType type = AxisType::Loop);

  explicit operator bool() const { return n_ != nullptr; }
  Op op() const;
  DType dtype() const;
  const std::vector<UOp>& src() const;
  const UOp& src(size_t i) const;
  const Arg& arg() const;
  /// Structural hash: a function of (op, dtype, arg, sources' hashes), the same in every process.
  uint64_t hash() const;
  const UOpNode* node() const { return n_; }

  /// The payload as T; an InternalError if it holds another type.
  template <typename T>
  const T& arg_as() const;
  /// The value of a CONST as double / int64 / bool (converting).
  double const_value() const;
  int64_t const_int() const;
  bool is_const() const { return n_ && op() == Op::CONST; }
  bool is_const(double v) const { return is_const() && const_value() == v; }

  /// A new node with the same op, dtype and arg but other sources (this node if they are equal).
  UOp replace_src(std::vector<UOp> src) const;
  /// Every node reachable from this one, each after all its sources (iterative).
  std::vector<UOp> toposort() const;
  /// Like toposort, but does not enter (or list) nodes for which `enter` returns false.
  std::vector<UOp> toposort(const std::function<bool(const UOp&)>& enter) const;
  /// Replace nodes by the map, rebuilding what depends on them.
  UOp substitute(const std::vector<std::pair<UOp, UOp>>& mapping) const;

  /// Interval analysis: the smallest and largest value this integer/bool node can take
  /// (dtype bounds when unknown).
  int64_t vmin() const;
  int64_t vmax() const;

  /// Compact infix rendering of a symbolic expression: "((x*4)+3)".
  std::string render() const;
  /// One line per node, numbered, sources by number (used by DEBUG and golden tests).
  std::string print_graph() const;

  // Symbolic arithmetic. A plain number adopts this node's dtype.
  UOp alu(Op op, const UOp& b) const;
  UOp alu(Op op) const;
  UOp cast(DType t) const;
  UOp where(const UOp& a, const UOp& b) const;
  UOp const_like(double v) const;
  UOp const_int_like(int64_t v) const;
  UOp operator-() const { return alu(Op::NEG); }
  UOp lt(const UOp& b) const { return alu(Op::CMPLT, b); }
  UOp ne(const UOp& b) const { return alu(Op::CMPNE, b); }
  UOp eq(const UOp& b) const { return alu(Op::CMPEQ, b); }
  UOp max(const UOp& b) const { return alu(Op::MAX, b); }
  UOp idiv(const UOp& b) const { return alu(Op::IDIV, b); }
  UOp lt(int64_t b) const { return lt(const_int_like(b)); }
  UOp idiv(int64_t b) const { return idiv(const_int_like(b)); }
  UOp max(int64_t b) const { return max(const_int_like(b)); }

  friend bool operator==(const UOp& a, const UOp& b) { return a.n_ == b.n_; }
  friend bool operator<(const UOp& a, const UOp& b) { return a.n_ < b.n_; }

 private:
  explicit UOp(const UOpNode* n) : n_(n) {}  // takes a reference already counted
  const UOpNode* n_ = nullptr;
  friend struct Interner;
};

UOp operator+(const UOp& a, const UOp& b);
UOp operator-(const UOp& a, const UOp& b);
UOp operator*(const UOp& a, const UOp& b);
UOp operator%(const UOp& a, const UOp& b);
UOp operator+(const UOp& a, int64_t b);
UOp operator-(const UOp& a, int64_t b);
UOp operator*(const UOp& a, int64_t b);
UOp operator%(const UOp& a, int64_t b);
UOp operator+(int64_t a, const UOp& b);
UOp operator*(int64_t a, const UOp& b);
// Bitwise operators (AND, OR, XOR, SHL, SHR): on bools & and | are the logical and/or.
UOp operator&(const UOp& a, const UOp& b);
UOp operator|(const UOp& a, const UOp& b);
UOp operator^(const UOp& a, const UOp& b);
UOp operator<<(const UOp& a, const UOp& b);
UOp operator>>(const UOp& a, const UOp& b);
UOp operator&(const UOp& a, int64_t b);
UOp operator|(const UOp& a, int64_t b);
UOp operator^(const UOp& a, int64_t b);
UOp operator<<(const UOp& a, int64_t b);
UOp operator>>(const UOp& a, int64_t b);

/// The node behind a UOp. Never constructed directly: UOp::make interns it.
struct UOpNode {
  Op op;
  DType dtype;
  std::vector<UOp> src;
  Arg arg;
  uint64_t hash;
  mutable std::atomic<int64_t> refs{1};
  // Cached interval bounds (valid when has_bounds is set).
  mutable std::atomic<bool> has_bounds{false};
  mutable std::atomic<int64_t> bound_min{0}, bound_max{0};
  // Cached tensor-graph shape (owned; see uop/shape.h).
  mutable std::atomic<std::vector<UOp>*> shape{nullptr};
  ~UOpNode() { delete shape.load(); }
};

/// Number of live interned nodes (for tests and leak checks).
size_t live_uop_count();
/// Called with the BufferArg id of every BUFFER node that dies (the runtime frees its memory).
using BufferReleaseHook = void (*)(int64_t buffer_id);
void set_buffer_release_hook(BufferReleaseHook hook);

template <typename T>
const T& UOp::arg_as() const {
  if (auto* v = std::get_if<T>(&arg())) return *v;
  throw_bad_arg_access();
}

}  // namespace ugrad

template <>
struct std::hash<ugrad::UOp> {
  size_t operator()(const ugrad::UOp& u) const noexcept {
    return std::hash<const void*>()(u.node());
  }
};
