#include "llm/kernels/linear.h"

#include "base/env.h"
#include "llm/kernels/int8_quantize.h"
#include "llm/kernels/matmul_wmma.h"
#include "llm/kernels/matvec_int8.h"
#include "llm/quant/int8_rows.h"
#include "llm/quant/lazy_dequant.h"
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
  return knob_int(Knob::LLM_KERNELS) != 0 && f.is_gpu && f.int8_dot &&
         matvec_int8_supports(type, out, in);
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

Tensor ExpertLinears::operator()(const Tensor& x, const Tensor& ids) const {
  const int64_t rows = ids.size(0), k = ids.size(1), experts = weight.size(0), out = weight.size(1),
                in = weight.size(2);
  const int64_t per_slot = x.ndim() == 3 ? k : 1;
  if (words.defined() && rows * k <= kMatvecMaxExpertRows) {
    Tensor xs = x.reshape({rows, per_slot, in}).expand({rows, k, in}).reshape({rows * k, in});
    return matvec_int8(int8_quantize(xs), words, type, out, in, ids.reshape({rows * k}), experts)
        .reshape({rows, k, out});
  }
  Tensor chosen = weight.index_select(0, ids.reshape({rows * k})).reshape({rows, k, out, in});
  return (chosen * x.reshape({rows, per_slot, 1, in})).sum({3});
}

Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner) {
  Linear l;
  l.weight = load_weight(t, device, owner);
  l.type = t.type;
  const int64_t n = static_cast<int64_t>(t.data.size());
  const DeviceFeatures f = device_features(l.weight.device());
  if (knob_int(Knob::LLM_KERNELS) == 0 || t.dims.size() != 2 || !f.int8_dot) return l;
  const auto in = static_cast<int64_t>(t.dims[0]), out = static_cast<int64_t>(t.dims[1]);
  if (gpu_int8(f, t.type, out, in)) {
    l.kernel = Linear::Kernel::GpuInt8;
    l.words =
        Tensor::from_host_memory(std::as_bytes(t.data), {n / 4}, dtypes::uint32, device, owner);
    l.weight = dequantize_lazy(bytes_of(l.words), t.type, {out, in});
  } else if (t.type == GgmlType::Q4_K && !f.is_gpu &&
             reinterpret_cast<uintptr_t>(t.data.data()) % 4 == 0) {
    l.kernel = Linear::Kernel::CpuDot4;
    l.blocks = Tensor::from_host_memory(std::as_bytes(t.data), {n}, dtypes::uint8, device, owner);
    l.words =
        Tensor::from_host_memory(std::as_bytes(t.data), {n / 4}, dtypes::uint32, device, owner);
  }
  return l;
}

Tensor Linear::operator()(const Tensor& x) const {
  const int64_t rows = x.ndim() == 2 ? x.size(0) : 0, out = weight.size(0), in = weight.size(1);
  if (kernel == Kernel::GpuInt8 && rows >= 1 && rows <= kMatvecMaxRows)
    return matvec_int8(int8_quantize(x), words, type, out, in);
  if (kernel == Kernel::GpuInt8 && rows <= kWmmaRows && matmul_wmma_supports(type, out, in))
    return matmul_wmma(type == GgmlType::Q4_K ? round_rows_int8(x) : x, words, type, out, in);
  if (kernel == Kernel::CpuDot4 && rows == 1)
    return q4_k_linear_int8(quantize_rows_int8(x), blocks, words, out, in);
  if (type != GgmlType::Q4_K) return x.linear(weight);
  // Materialized: fused into the matmul, the rounding would cost it its tiling.
  return round_rows_int8(x).contiguous().linear(weight);
}

}  // namespace ugrad::llm
