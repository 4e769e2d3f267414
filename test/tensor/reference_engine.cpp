// A slow reference implementation of runtime/realize.h for builds without the realize engine:
// it interprets the tensor graph node by node on the host (movement ops as index maps, ALU ops
// through exec_alu). Linked into test_tensor only when the ugrad_runtime library is absent, so the
// Tensor API can be tested numerically on its own.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "runtime/realize.h"
#include "uop/alu.h"
#include "uop/error.h"
#include "uop/float16.h"

namespace ugrad {
namespace {

struct Storage {
  DType dtype;
  std::vector<std::byte> bytes;
};

std::mutex g_mutex;
std::unordered_map<int64_t, Storage> g_buffers;
int64_t g_next_id = 1;

ConstValue load(const Storage& s, int64_t i) {
  const std::byte* p = s.bytes.data() + i * itemsize(s.dtype);
  auto rd = [p]<typename T>(T) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  };
  switch (s.dtype.scalar) {
    case Scalar::Bool:
      return rd(uint8_t{}) != 0;
    case Scalar::Int8:
      return int64_t{rd(int8_t{})};
    case Scalar::Int16:
      return int64_t{rd(int16_t{})};
    case Scalar::Int32:
      return int64_t{rd(int32_t{})};
    case Scalar::Int64:
      return rd(int64_t{});
    case Scalar::UInt8:
      return int64_t{rd(uint8_t{})};
    case Scalar::UInt16:
      return int64_t{rd(uint16_t{})};
    case Scalar::UInt32:
      return int64_t{rd(uint32_t{})};
    case Scalar::UInt64:
      return static_cast<int64_t>(rd(uint64_t{}));
    case Scalar::Float16:
      return double{half_to_float(rd(uint16_t{}))};
    case Scalar::BFloat16:
      return double{bf16_to_float(rd(uint16_t{}))};
    case Scalar::Float32:
      return double{rd(float{})};
    case Scalar::Float64:
      return rd(double{});
    default:
      internal_error("reference engine: no storage for {}", to_string(s.dtype));
  }
}

void store(Storage& s, int64_t i, ConstValue v) {
  std::byte* p = s.bytes.data() + i * itemsize(s.dtype);
  auto wr = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (s.dtype.scalar) {
    case Scalar::Bool:
      wr(static_cast<uint8_t>(const_as_bool(v)));
      break;
    case Scalar::Int8:
      wr(static_cast<int8_t>(const_as_int(v)));
      break;
    case Scalar::Int16:
      wr(static_cast<int16_t>(const_as_int(v)));
      break;
    case Scalar::Int32:
      wr(static_cast<int32_t>(const_as_int(v)));
      break;
    case Scalar::Int64:
      wr(const_as_int(v));
      break;
    case Scalar::UInt8:
      wr(static_cast<uint8_t>(const_as_int(v)));
      break;
    case Scalar::UInt16:
      wr(static_cast<uint16_t>(const_as_int(v)));
      break;
    case Scalar::UInt32:
      wr(static_cast<uint32_t>(const_as_int(v)));
      break;
    case Scalar::UInt64:
      wr(static_cast<uint64_t>(const_as_int(v)));
      break;
    case Scalar::Float16:
      wr(float_to_half(static_cast<float>(const_as_double(v))));
      break;
    case Scalar::BFloat16:
      wr(float_to_bf16(static_cast<float>(const_as_double(v))));
      break;
    case Scalar::Float32:
      wr(static_cast<float>(const_as_double(v)));
      break;
    case Scalar::Float64:
      wr(const_as_double(v));
      break;
    default:
      internal_error("reference engine: no storage for {}", to_string(s.dtype));
  }
}

struct Dense {
  std::vector<int64_t> dims;
  std::vector<ConstValue> v;
};

std::vector<int64_t> dims_of(const UOp& u) {
  auto d = static_dims(shape_of(u));
  if (!d) fail("reference engine: symbolic shape {}", shape_str(shape_of(u)));
  return *d;
}

// Maps each output element of a movement op to its input element (-1: padding).
std::vector<int64_t> movement_map(const UOp& u, const std::vector<int64_t>& in_dims,
                                  const std::vector<int64_t>& out_dims) {
  size_t r = out_dims.size();
  int64_t n = 1;
  for (int64_t d : out_dims) n *= d;
  std::vector<int64_t> map(n), c(r), ci(in_dims.size());
  std::vector<int64_t> in_stride(in_dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(in_dims.size()) - 2; i >= 0; --i)
    in_stride[i] = in_stride[i + 1] * in_dims[i + 1];
  auto arg_dims = [&](size_t from) {
    std::vector<int64_t> v;
    for (size_t i = from; i < from + r; ++i) v.push_back(u.src(i).const_int());
    return v;
  };
  std::vector<int64_t> lo, order;
  std::vector<bool> flipped(r);
  if (u.op() == Op::PAD || u.op() == Op::SHRINK) lo = arg_dims(1);
  if (u.op() == Op::PERMUTE) order = u.arg_as<std::vector<int64_t>>();
  if (u.op() == Op::FLIP)
    for (int64_t a : u.arg_as<std::vector<int64_t>>()) flipped[a] = true;
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat;
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      c[i] = out_dims[i] ? rem % out_dims[i] : 0;
      rem = out_dims[i] ? rem / out_dims[i] : 0;
    }
    bool valid = true;
    switch (u.op()) {
      case Op::EXPAND:
        for (size_t i = 0; i < r; ++i) ci[i] = in_dims[i] == 1 ? 0 : c[i];
        break;
      case Op::PERMUTE:
        for (size_t i = 0; i < r; ++i) ci[order[i]] = c[i];
        break;
      case Op::PAD:
        for (size_t i = 0; i < r; ++i) {
          ci[i] = c[i] - lo[i];
          valid &= ci[i] >= 0 && ci[i] < in_dims[i];
        }
        break;
      case Op::SHRINK:
        for (size_t i = 0; i < r; ++i) ci[i] = c[i] + lo[i];
        break;
      case Op::FLIP:
        for (size_t i = 0; i < r; ++i) ci[i] = flipped[i] ? in_dims[i] - 1 - c[i] : c[i];
        break;
      default:
        internal_error("movement_map of {}", op_name(u.op()));
    }
    int64_t idx = 0;
    for (size_t i = 0; valid && i < ci.size(); ++i) idx += ci[i] * in_stride[i];
    map[flat] = valid ? idx : -1;
  }
  return map;
}

ConstValue zero_of(DType t) {
  if (is_bool(t)) return false;
  if (is_float(t)) return 0.0;
  return int64_t{0};
}

ConstValue reduce_identity(Op op, DType t) {
  if (op == Op::ADD) return cast_value(int64_t{0}, dtypes::int64, t);
  if (op == Op::MUL) return cast_value(int64_t{1}, dtypes::int64, t);
  if (is_bool(t)) return false;
  if (is_float(t)) return -INFINITY;
  if (is_unsigned(t)) return int64_t{0};
  return static_cast<int64_t>(dtype_min(t));
}

Dense reduce(const UOp& u, const Dense& in) {
  const auto& ra = u.arg_as<ReduceArg>();
  Dense out{dims_of(u), {}};
  int64_t n = 1;
  for (int64_t d : out.dims) n *= d;
  out.v.assign(n, reduce_identity(ra.op, u.dtype()));
  size_t r = in.dims.size();
  std::vector<int64_t> c(r), out_stride(r, 1);
  for (int64_t i = static_cast<int64_t>(r) - 2; i >= 0; --i)
    out_stride[i] = out_stride[i + 1] * out.dims[i + 1];
  for (size_t flat = 0; flat < in.v.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat), o = 0;
    for (int64_t i = static_cast<int64_t>(r) - 1; i >= 0; --i) {
      int64_t ci = rem % in.dims[i];
      rem /= in.dims[i];
      if (out.dims[i] != 1) o += ci * out_stride[i];
    }
    ConstValue ops[] = {out.v[o], in.v[flat]};
    out.v[o] = exec_alu(ra.op, u.dtype(), ops);
  }
  return out;
}

// Evaluates `root`; `index_mode` replaces each BUFFER by the indices of its elements.
Dense evaluate(const UOp& root, bool index_mode) {
  std::unordered_map<const UOpNode*, Dense> vals;
  for (const UOp& u : root.toposort()) {
    if (u.dtype() == dtypes::index) continue;  // dims of movement ops
    Dense d;
    auto src = [&](size_t i) -> const Dense& { return vals.at(u.src(i).node()); };
    switch (u.op()) {
      case Op::BUFFER: {
        const auto& ba = u.arg_as<BufferArg>();
        d.dims = {ba.size};
        std::lock_guard lock(g_mutex);
        const Storage& s = g_buffers.at(ba.id);
        for (int64_t i = 0; i < ba.size; ++i)
          d.v.push_back(index_mode ? ConstValue(i) : load(s, i));
        break;
      }
      case Op::CONST: {
        const Arg& a = u.arg();
        if (auto* b = std::get_if<bool>(&a))
          d.v = {*b};
        else if (auto* i = std::get_if<int64_t>(&a))
          d.v = {*i};
        else
          d.v = {std::get<double>(a)};
        break;
      }
      case Op::RESHAPE:
      case Op::CONTIGUOUS:
      case Op::DETACH:
      case Op::COPY:
        d = src(0);
        d.dims = dims_of(u);
        break;
      case Op::EXPAND:
      case Op::PERMUTE:
      case Op::PAD:
      case Op::SHRINK:
      case Op::FLIP: {
        const Dense& in = src(0);
        d.dims = dims_of(u);
        for (int64_t i : movement_map(u, in.dims, d.dims))
          d.v.push_back(i < 0 ? (index_mode ? ConstValue(int64_t{-1}) : zero_of(u.dtype()))
                              : in.v[i]);
        break;
      }
      case Op::REDUCE_AXIS:
        d = reduce(u, src(0));
        break;
      default: {
        if (!is_alu(u.op())) fail("reference engine: cannot evaluate {}", op_name(u.op()));
        d.dims = dims_of(u);
        DType sd = u.op() == Op::WHERE ? u.src(1).dtype() : u.src(0).dtype();
        size_t n = src(0).v.size();
        std::vector<ConstValue> ops(u.src().size());
        for (size_t i = 0; i < n; ++i) {
          for (size_t k = 0; k < ops.size(); ++k) ops[k] = src(k).v[i];
          d.v.push_back(exec_alu(u.op(), u.dtype(), ops, sd));
        }
      }
    }
    vals[u.node()] = std::move(d);
  }
  return vals.at(root.node());
}

UOp make_buffer(const std::string& device, DType dtype, int64_t count) {
  std::lock_guard lock(g_mutex);
  int64_t id = g_next_id++;
  g_buffers[id] = Storage{dtype, std::vector<std::byte>(count * itemsize(dtype))};
  return UOp::make(Op::BUFFER, dtype, {}, BufferArg{id, count, device});
}

}  // namespace

UOp new_buffer(const std::string& device, DType dtype, int64_t count) {
  return make_buffer(device, dtype, count);
}

std::vector<UOp> realize(std::span<const UOp> roots,
                         const std::vector<std::pair<std::string, int64_t>>& /*var_vals*/) {
  std::vector<UOp> out;
  for (const UOp& root : roots) {
    if (root.op() == Op::ASSIGN) {
      Dense target = evaluate(root.src(0), true), value = evaluate(root.src(1), false);
      UOp buf = root.src(0);
      while (buf.op() != Op::BUFFER) buf = buf.src(0);
      std::lock_guard lock(g_mutex);
      Storage& s = g_buffers.at(buf.arg_as<BufferArg>().id);
      for (size_t i = 0; i < target.v.size(); ++i)
        store(s, std::get<int64_t>(target.v[i]), value.v[i]);
      out.push_back(root.src(0));
      continue;
    }
    Dense d = evaluate(root, false);
    UOp buf = make_buffer("CPU", root.dtype(), static_cast<int64_t>(d.v.size()));
    {
      std::lock_guard lock(g_mutex);
      Storage& s = g_buffers.at(buf.arg_as<BufferArg>().id);
      for (size_t i = 0; i < d.v.size(); ++i) store(s, static_cast<int64_t>(i), d.v[i]);
    }
    std::vector<UOp> src{buf};
    for (int64_t x : d.dims) src.push_back(dim(x));
    out.push_back(UOp::make(Op::RESHAPE, root.dtype(), src));
  }
  return out;
}

void copy_in(const UOp& buffer, std::span<const std::byte> data) {
  std::lock_guard lock(g_mutex);
  Storage& s = g_buffers.at(buffer.arg_as<BufferArg>().id);
  if (data.size() != s.bytes.size()) fail("copy_in: {} bytes into {}", data.size(), s.bytes.size());
  std::memcpy(s.bytes.data(), data.data(), data.size());
}

void copy_out(const UOp& buffer, std::span<std::byte> data) {
  std::lock_guard lock(g_mutex);
  Storage& s = g_buffers.at(buffer.arg_as<BufferArg>().id);
  if (data.size() != s.bytes.size())
    fail("copy_out: {} bytes from {}", data.size(), s.bytes.size());
  std::memcpy(data.data(), s.bytes.data(), data.size());
}

UOp realized_buffer(const UOp& node) {
  UOp u = node;
  while (u.op() == Op::RESHAPE || u.op() == Op::SHRINK) u = u.src(0);
  return u.op() == Op::BUFFER ? u : UOp();
}

}  // namespace ugrad
