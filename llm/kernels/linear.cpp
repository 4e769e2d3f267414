#include "llm/kernels/linear.h"

#include "base/env.h"
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

Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner) {
  Linear l{load_weight(t, device, owner), t.type, Tensor(), Tensor()};
  const bool aligned = reinterpret_cast<uintptr_t>(t.data.data()) % 4 == 0;
  const DeviceFeatures f = device_features(l.weight.device());
  if (t.type == GgmlType::Q4_K && !f.is_gpu && f.int8_dot && aligned &&
      knob_int(Knob::LLM_KERNELS) != 0) {
    const int64_t n = static_cast<int64_t>(t.data.size());
    l.blocks = Tensor::from_host_memory(std::as_bytes(t.data), {n}, dtypes::uint8, device, owner);
    l.words =
        Tensor::from_host_memory(std::as_bytes(t.data), {n / 4}, dtypes::uint32, device, owner);
  }
  return l;
}

Tensor Linear::operator()(const Tensor& x) const {
  if (type != GgmlType::Q4_K) return x.linear(weight);
  if (words.defined() && x.ndim() == 2 && x.size(0) == 1)
    return q4_k_linear_int8(quantize_rows_int8(x), blocks, words, weight.size(0), weight.size(1));
  // Materialized: fused into the matmul, the rounding would cost it its tiling.
  return round_rows_int8(x).contiguous().linear(weight);
}

}  // namespace ugrad::llm
