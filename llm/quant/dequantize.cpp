#include "llm/quant/dequantize.h"

#include <algorithm>

#include "base/error.h"
#include "llm/quant/kernels_impl.h"

namespace ugrad::llm {
namespace {

struct DequantEntry {
  GgmlType type;
  detail::DequantFn fn;
};

constexpr DequantEntry kDequantizers[] = {
    {GgmlType::F32, detail::dequantize_f32},       {GgmlType::F16, detail::dequantize_f16},
    {GgmlType::BF16, detail::dequantize_bf16},     {GgmlType::Q4_0, detail::dequantize_q4_0},
    {GgmlType::Q4_1, detail::dequantize_q4_1},     {GgmlType::Q5_0, detail::dequantize_q5_0},
    {GgmlType::Q5_1, detail::dequantize_q5_1},     {GgmlType::Q8_0, detail::dequantize_q8_0},
    {GgmlType::Q2_K, detail::dequantize_q2_k},     {GgmlType::Q3_K, detail::dequantize_q3_k},
    {GgmlType::Q4_K, detail::dequantize_q4_k},     {GgmlType::Q5_K, detail::dequantize_q5_k},
    {GgmlType::Q6_K, detail::dequantize_q6_k},     {GgmlType::Q8_K, detail::dequantize_q8_k},
    {GgmlType::IQ4_NL, detail::dequantize_iq4_nl}, {GgmlType::IQ4_XS, detail::dequantize_iq4_xs},
    {GgmlType::MXFP4, detail::dequantize_mxfp4},
};

const DequantEntry* find_dequantizer(GgmlType t) {
  auto it = std::find_if(std::begin(kDequantizers), std::end(kDequantizers),
                         [&](const DequantEntry& e) { return e.type == t; });
  return it == std::end(kDequantizers) ? nullptr : it;
}

}  // namespace

bool can_dequantize(GgmlType t) { return find_dequantizer(t) != nullptr; }

void dequantize(GgmlType t, std::span<const uint8_t> src, std::span<float> dst) {
  const QuantFormat& f = format_of(t);
  const DequantEntry* entry = find_dequantizer(t);
  if (!entry) fail("dequantize: type {} is not supported", f.name);
  if (dst.size() % f.block_size != 0)
    fail("dequantize {}: {} output elements is not a multiple of the block size {}", f.name,
         dst.size(), f.block_size);
  const size_t nblocks = dst.size() / f.block_size;
  if (src.size() != nblocks * f.block_bytes)
    fail("dequantize {}: {} elements need {} bytes ({} blocks of {}), got {}", f.name, dst.size(),
         nblocks * f.block_bytes, nblocks, f.block_bytes, src.size());
  if (nblocks) entry->fn(src.data(), dst.data(), nblocks);
}

}  // namespace ugrad::llm
