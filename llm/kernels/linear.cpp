#include "llm/kernels/linear.h"

#include "base/env.h"
#include "llm/gguf/mapped_file.h"
#include "llm/kernels/int8_quantize.h"
#include "llm/kernels/materialized.h"
#include "llm/kernels/matmul_wmma.h"
#include "llm/kernels/matvec_int8.h"
#include "llm/quant/int8_rows.h"
#include "llm/quant/lazy_dequant.h"
#include "llm/quant/linear_int8.h"
#include "runtime/device_features.h"

namespace ugrad::llm {

Tensor load_weight(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner) {
  std::vector<int64_t> shape(t.dims.rbegin(), t.dims.rend());  // ggml lists innermost first
  // Plain float types are tensors of their own dtype: no byte reassembly in every kernel. BF16
  // is the high half of an f32 (a uint16 load, widened and bitcast).
  if (t.type == GgmlType::BF16)
    return (Tensor::from_host_memory(std::as_bytes(t.data), shape, dtypes::uint16, device, owner)
                .cast(dtypes::uint32) *
            65536)
        .bitcast(dtypes::float32);
  if (t.type == GgmlType::F32 || t.type == GgmlType::F16)
    return Tensor::from_host_memory(std::as_bytes(t.data), shape,
                                    t.type == GgmlType::F32 ? dtypes::float32 : dtypes::float16,
                                    device, owner)
        .cast(dtypes::float32);
  Tensor raw = Tensor::from_host_memory(
      std::as_bytes(t.data), {static_cast<int64_t>(t.data.size())}, dtypes::uint8, device, owner);
  return dequantize_lazy(raw, t.type, shape);
}

namespace {

// The bytes of `words` (uint32, little-endian) as a lazy (4 x words) uint8 tensor.
Tensor bytes_of(const Tensor& words) {
  const int64_t n = words.size(0);
  std::vector<Tensor> bytes;
  for (int64_t i = 0; i < 4; ++i)
    bytes.push_back((idiv(words, int64_t{1} << (8 * i)) & 255).reshape({n, 1}));
  return cat(bytes, 1).cast(dtypes::uint8).reshape({4 * n});
}

// Whether a GPU int8 kernel takes a `type` matrix of (out, in) on `device`.
bool gpu_int8(const DeviceFeatures& f, GgmlType type, int64_t out, int64_t in) {
  return select(f, matvec_int8_needs(type, out, in));
}

// The GPU int8 kernels' Linear over a matrix's bytes: the device holds them once, as words,
// which the generic path reads too.
Linear gpu_linear(std::span<const std::byte> bytes, GgmlType type, int64_t out, int64_t in,
                  const DeviceFeatures& f, const std::string& device,
                  const std::shared_ptr<const void>& owner) {
  Linear l;
  l.type = type;
  l.kernel = Linear::Kernel::GpuInt8;
  l.wmma = select(f, matmul_wmma_needs(type, out, in));
  l.words = Tensor::from_host_memory(bytes, {static_cast<int64_t>(bytes.size()) / 4},
                                     dtypes::uint32, device, owner);
  l.weight = dequantize_lazy(bytes_of(l.words), type, {out, in});
  return l;
}

// The weight repacked for matmul_int8 where it takes it and the copy fits: the copy is extra
// memory, and a weight whose copy would take more than half of what is available keeps the
// generic path. Else undefined.
PackedInt8Weight pack_if_memory(const GgufTensor& t, int64_t out, int64_t in,
                                const std::string& device) {
  if (!matmul_int8_supports(t.type, in) ||
      static_cast<size_t>(packed_bytes(t.type, out, in)) > mem_available() / 2)
    return {};
  return pack_matmul_int8(t.type, std::as_bytes(t.data), out, in, device);
}

}  // namespace

ExpertLinears load_experts(const GgufTensor& t, const std::string& device,
                           const std::shared_ptr<const void>& owner) {
  ExpertLinears e;
  e.weight = load_weight(t, device, owner);
  e.type = t.type;
  if (t.dims.size() == 3 &&
      gpu_int8(device_features(e.weight.device()), t.type, static_cast<int64_t>(t.dims[1]),
               static_cast<int64_t>(t.dims[0]))) {
    const int64_t n = static_cast<int64_t>(t.data.size());
    e.words =
        Tensor::from_host_memory(std::as_bytes(t.data), {n / 4}, dtypes::uint32, device, owner);
    e.weight = dequantize_lazy(bytes_of(e.words), t.type, e.weight.dims());
  }
  return e;
}

Tensor ExpertLinears::operator()(const Tensor& x, const Tensor& ids,
                                 std::optional<Int8Rows>& int8_x) const {
  const int64_t rows = ids.size(0), k = ids.size(1), experts = weight.size(0), out = weight.size(1),
                in = weight.size(2);
  const int64_t per_slot = x.ndim() == 3 ? k : 1;
  if (words.defined() && rows * k <= kMatvecMaxExpertRows) {
    Tensor xs = x.reshape({rows, per_slot, in}).expand({rows, k, in}).reshape({rows * k, in});
    if (!int8_x) int8_x = int8_quantize(xs);
    return matvec_int8(*int8_x, words, type, out, in, ids.reshape({rows * k}), experts)
        .reshape({rows, k, out});
  }
  Tensor chosen = weight.index_select(0, ids.reshape({rows * k})).reshape({rows, k, out, in});
  return (chosen * x.reshape({rows, per_slot, 1, in})).sum({3});
}

Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner, bool one_row) {
  Linear l;
  l.weight = load_weight(t, device, owner);
  l.type = t.type;
  const DeviceFeatures f = device_features(l.weight.device());
  if (!kernels_enabled() || t.dims.size() != 2 || !f.int8_dot) return l;
  const auto in = static_cast<int64_t>(t.dims[0]), out = static_cast<int64_t>(t.dims[1]);
  if (gpu_int8(f, t.type, out, in))
    return gpu_linear(std::as_bytes(t.data), t.type, out, in, f, device, owner);
  if (f.is_gpu) return l;
  if (linear_int8_supports(t.type, in)) {
    // linear_int8 reads a copy of the blocks reordered at load (1-3% larger than the file's):
    // where that would take more than half of what is available, the generic path.
    const auto size = static_cast<size_t>(linear_int8_bytes(t.type, out, in));
    if (size > mem_available() / 2) return l;
    std::shared_ptr<std::byte> copy = reorder_linear_int8(t.type, std::as_bytes(t.data));
    const std::span<const std::byte> bytes{copy.get(), size};
    const auto n = static_cast<int64_t>(bytes.size());
    l.kernel = Linear::Kernel::CpuDot4;
    l.blocks = Tensor::from_host_memory(bytes, {n}, dtypes::uint8, device, copy);
    l.words = Tensor::from_host_memory(bytes, {n / 4}, dtypes::uint32, device, copy);
  }
  if (!one_row) l.packed = pack_if_memory(t, out, in, device);
  if (l.packed.words.defined()) l.kernel = Linear::Kernel::CpuDot4;
  return l;
}

Tensor Linear::operator()(const Tensor& x) const {
  std::optional<Int8Rows> int8_x;
  return (*this)(x, int8_x);
}

Tensor Linear::operator()(const Tensor& x, std::optional<Int8Rows>& int8_x) const {
  const int64_t rows = x.ndim() == 2 ? x.size(0) : 0, out = weight.size(0), in = weight.size(1);
  if (kernel == Kernel::GpuInt8 && rows >= 1 && rows <= kMatvecMaxRows) {
    if (!int8_x) int8_x = int8_quantize(x);
    return matvec_int8(*int8_x, words, type, out, in);
  }
  if (kernel == Kernel::GpuInt8 && rows <= kWmmaRows && wmma)
    return matmul_wmma(int8_activations(type) ? round_rows_int8(x) : x, words, type, out, in);
  if (kernel == Kernel::CpuDot4 && rows == 1 && blocks.defined())
    return linear_int8(quantize_rows_int8(x), type, blocks, words, out, in);
  if (kernel == Kernel::CpuDot4 && rows > 1 && packed.words.defined())
    return matmul_int8(quantize_pairs_int8(x), packed);
  // The float product's x materialized here, so callers pass expressions: the int8 paths above
  // fuse them into x's quantization instead (one kernel fewer each).
  if (!int8_activations(type)) return materialized(x).linear(weight);
  // Materialized: fused into the matmul, the rounding would cost it its tiling (measured: a small
  // Q4_K_M model's CPU prefill 2.5x slower).
  return round_rows_int8(x).contiguous().linear(weight);
}

LinearGroup load_linears(std::span<const GgufTensor* const> ts, const std::string& device,
                         const std::shared_ptr<const void>& owner) {
  LinearGroup g;
  if (ts.empty()) return g;
  // The device by its resolved name ("" is the default device).
  const DeviceFeatures f = device_features(Tensor::empty({0}, dtypes::uint8, device).device());
  // Members the GPU int8 kernels take, by type and by whether the prefill kernel takes them too
  // (so that no member changes kernels by being fused): each such set becomes one matrix.
  auto kernels = [&](const GgufTensor& t) {
    if (t.dims.size() != 2) return -1;
    const auto in = static_cast<int64_t>(t.dims[0]), out = static_cast<int64_t>(t.dims[1]);
    return gpu_int8(f, t.type, out, in) ? int(select(f, matmul_wmma_needs(t.type, out, in))) : -1;
  };
  std::vector<std::vector<size_t>> fused;
  std::vector<bool> taken(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const GgufTensor& t = *ts[i];
    if (taken[i] || kernels(t) < 0) continue;
    std::vector<size_t> same{i};
    for (size_t j = i + 1; j < ts.size(); ++j)
      if (ts[j]->type == t.type && ts[j]->dims[0] == t.dims[0] && kernels(*ts[j]) == kernels(t))
        same.push_back(j);
    if (same.size() < 2) continue;
    for (size_t j : same) taken[j] = true;
    fused.push_back(same);
  }
  g.parts.resize(ts.size());
  for (const std::vector<size_t>& members : fused) {
    auto bytes = std::make_shared<std::vector<std::byte>>();
    int64_t out = 0;
    for (size_t j : members) {
      const auto data = std::as_bytes(ts[j]->data);
      bytes->insert(bytes->end(), data.begin(), data.end());
      const auto rows = static_cast<int64_t>(ts[j]->dims[1]);
      g.parts[j] = {g.linears.size(), out, rows};
      out += rows;
    }
    const GgufTensor& first = *ts[members[0]];
    g.linears.push_back(
        gpu_linear(*bytes, first.type, out, static_cast<int64_t>(first.dims[0]), f, device, bytes));
  }
  for (size_t i = 0; i < ts.size(); ++i)
    if (!taken[i]) {
      g.parts[i] = {g.linears.size(), 0, static_cast<int64_t>(ts[i]->dims[1])};
      g.linears.push_back(load_linear(*ts[i], device, owner));
    }
  return g;
}

std::vector<Tensor> LinearGroup::operator()(const Tensor& x) const {
  // x quantized to int8 once for the members whose kernels read it so.
  std::optional<Int8Rows> int8_x;
  std::vector<Tensor> products;
  for (const Linear& l : linears) products.push_back(materialized(l(x, int8_x)));
  std::vector<Tensor> out;
  for (const Part& p : parts) {
    const Tensor& y = products[p.linear];
    out.push_back(p.out == y.size(1) ? y : y.shrink({{0, y.size(0)}, {p.first, p.first + p.out}}));
  }
  return out;
}

}  // namespace ugrad::llm
