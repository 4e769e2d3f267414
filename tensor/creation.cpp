// Creation: constants (broadcast CONSTs, no memory), uninitialised buffers, and host data copied
// into a new buffer.
#include <bit>
#include <cmath>
#include <cstring>

#include "base/float16.h"
#include "runtime/realize.h"
#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

// Writes one value (already converted to `t` by cast_value) as `t`'s storage bytes.
void encode(ConstValue v, DType t, std::byte* p) {
  auto wr = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t.scalar) {
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
      wr(static_cast<int64_t>(const_as_int(v)));
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
      fail("tensor: dtype {} has no storage", to_string(t));
  }
}

void check_storage_dtype(DType t, std::string_view op) {
  if (t.count != 1 || t.is_ptr || is_weak(t) || t == dtypes::void_ || t == dtypes::index)
    fail("{}: {} is not a tensor element dtype", op, to_string(t));
}

void check_count(size_t have, const std::vector<int64_t>& shape, std::string_view op) {
  check_dims(shape, op);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (static_cast<int64_t>(have) != n)
    fail("{}: {} values for shape {} of {} elements", op, have, dims_str(shape), n);
}

template <typename V>
Tensor from_values(std::span<const V> values, DType from, const std::vector<int64_t>& shape,
                   DType dtype, const std::string& device, std::string_view op) {
  check_storage_dtype(dtype, op);
  check_count(values.size(), shape, op);
  size_t size = itemsize(dtype);
  std::vector<std::byte> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i)
    encode(cast_value(values[i], from, dtype), dtype, bytes.data() + i * size);
  return Tensor::from_bytes(bytes, shape, dtype, device);
}

}  // namespace

Tensor Tensor::empty(const std::vector<int64_t>& shape, DType dtype, const std::string& device) {
  check_storage_dtype(dtype, "empty");
  check_dims(shape, "empty");
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string dev = resolve_device(device);
  Tensor buf(new_buffer(dev, dtype, n), dev);
  return reshape_node(buf, make_shape(shape));
}

Tensor Tensor::from_bytes(std::span<const std::byte> bytes, const std::vector<int64_t>& shape,
                          DType dtype, const std::string& device) {
  Tensor t = empty(shape, dtype, device);
  if (bytes.size() != static_cast<size_t>(t.numel()) * itemsize(dtype))
    fail("from_bytes: {} bytes for shape {} of {}", bytes.size(), dims_str(shape),
         ugrad::to_string(dtype));
  UOp buf = t.node().op() == Op::BUFFER ? t.node() : t.node().src(0);
  if (!bytes.empty()) copy_in(buf, bytes);
  return t;
}

Tensor Tensor::from_host_memory(std::span<const std::byte> bytes, const std::vector<int64_t>& shape,
                                DType dtype, const std::string& device,
                                std::shared_ptr<const void> owner) {
  check_storage_dtype(dtype, "from_host_memory");
  check_dims(shape, "from_host_memory");
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (bytes.size() != static_cast<size_t>(n) * itemsize(dtype))
    fail("from_host_memory: {} bytes for shape {} of {}", bytes.size(), dims_str(shape),
         ugrad::to_string(dtype));
  std::string dev = resolve_device(device);
  Tensor buf(host_memory_buffer(dev, dtype, bytes, std::move(owner)), dev);
  return reshape_node(buf, make_shape(shape));
}

Tensor Tensor::from_doubles(std::span<const double> values, const std::vector<int64_t>& shape,
                            DType dtype, const std::string& device) {
  return from_values(values, dtypes::float64, shape, dtype, device, "from_vector");
}

Tensor Tensor::from_ints(std::span<const int64_t> values, const std::vector<int64_t>& shape,
                         DType dtype, const std::string& device) {
  return from_values(values, dtypes::int64, shape, dtype, device, "from_vector");
}

Tensor Tensor::full(const std::vector<int64_t>& shape, Number value, std::optional<DType> dtype,
                    const std::string& device) {
  DType t = dtype.value_or(strong(value.dtype));
  check_storage_dtype(t, "full");
  check_dims(shape, "full");
  return const_tensor(value.value, t, make_shape(shape), resolve_device(device));
}

Tensor Tensor::zeros(const std::vector<int64_t>& shape, DType dtype, const std::string& device) {
  return full(shape, 0, dtype, device);
}
Tensor Tensor::ones(const std::vector<int64_t>& shape, DType dtype, const std::string& device) {
  return full(shape, 1, dtype, device);
}
Tensor Tensor::scalar(Number value, std::optional<DType> dtype, const std::string& device) {
  return full({}, value, dtype, device);
}

Tensor Tensor::arange(int64_t stop, DType dtype, const std::string& device) {
  return arange(0.0, static_cast<double>(stop), 1.0, dtype, device);
}

// NOTE: computed on the host and uploaded (an O(n) copy), so the result is a realized buffer like
// any other data; the internal index vectors use the RANGE leaf of index_range instead.
Tensor Tensor::arange(double start, double stop, double step, DType dtype,
                      const std::string& device) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail("arange: bad range start {} stop {} step {}", start, stop, step);
  double count = std::ceil((stop - start) / step);
  if (count > double(int64_t(1) << 40)) fail("arange: {} elements is too many", count);
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  if (is_float(dtype)) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
    return from_doubles(v, {n}, dtype, device);
  }
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<int64_t>(start + static_cast<double>(i) * step);
  return from_ints(v, {n}, dtype, device);
}

// A RANGE leaf, not an uploaded buffer: in a kernel it is the loop index itself, so the code
// generator sees where(r == idx, x[r], 0) in a gather and can turn it into a direct load.
Tensor tensor_detail::index_range(int64_t n, const std::string& device) {
  return Tensor(UOp::make(Op::RANGE, dtypes::int32, {dim(n)}, RangeArg{}), resolve_device(device));
}

Tensor Tensor::eye(int64_t n, std::optional<int64_t> m, DType dtype, const std::string& device) {
  int64_t cols = m.value_or(n);
  check_dims({n, cols}, "eye");
  Tensor rows = index_range(n, device).reshape({n, 1});
  Tensor columns = index_range(cols, device).reshape({1, cols});
  return rows.eq(columns).cast(dtype);
}

}  // namespace ugrad
