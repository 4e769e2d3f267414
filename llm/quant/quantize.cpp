#include "llm/quant/quantize.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "llm/quant/kernels_impl.h"

namespace ugrad::llm {
namespace {

struct QuantEntry {
  GgmlType type;
  detail::QuantFn fn;
  bool finite_only;  // block scales of NaN/inf input are undefined in ggml: reject them
};

constexpr QuantEntry kQuantizers[] = {
    {GgmlType::F32, detail::quantize_f32, false},
    {GgmlType::F16, detail::quantize_f16, false},
    {GgmlType::BF16, detail::quantize_bf16, false},
    {GgmlType::Q4_0, detail::quantize_q4_0, true},
    {GgmlType::Q4_1, detail::quantize_q4_1, true},
    {GgmlType::Q5_0, detail::quantize_q5_0, true},
    {GgmlType::Q5_1, detail::quantize_q5_1, true},
    {GgmlType::Q8_0, detail::quantize_q8_0, true},
    {GgmlType::Q2_K, detail::quantize_q2_k, true},
    {GgmlType::Q3_K, detail::quantize_q3_k, true},
    {GgmlType::Q4_K, detail::quantize_q4_k, true},
    {GgmlType::Q5_K, detail::quantize_q5_k, true},
    {GgmlType::Q6_K, detail::quantize_q6_k, true},
    {GgmlType::Q8_K, detail::quantize_q8_k, true},
    {GgmlType::IQ4_NL, detail::quantize_iq4_nl, true},
    {GgmlType::IQ4_XS, detail::quantize_iq4_xs, true},
    {GgmlType::MXFP4, detail::quantize_mxfp4, true},
};

const QuantEntry* find_quantizer(GgmlType t) {
  auto it = std::find_if(std::begin(kQuantizers), std::end(kQuantizers),
                         [&](const QuantEntry& e) { return e.type == t; });
  return it == std::end(kQuantizers) ? nullptr : it;
}

}  // namespace

bool can_quantize(GgmlType t) { return find_quantizer(t) != nullptr; }

void quantize(GgmlType t, std::span<const float> src, std::span<uint8_t> dst) {
  const QuantFormat& f = format_of(t);
  const QuantEntry* entry = find_quantizer(t);
  if (!entry) fail("quantize: type {} is not supported", f.name);
  if (src.size() % f.block_size != 0)
    fail("quantize {}: {} input elements is not a multiple of the block size {}", f.name,
         src.size(), f.block_size);
  const size_t nblocks = src.size() / f.block_size;
  if (dst.size() != nblocks * f.block_bytes)
    fail("quantize {}: {} elements need {} bytes ({} blocks of {}), got {}", f.name, src.size(),
         nblocks * f.block_bytes, nblocks, f.block_bytes, dst.size());
  if (entry->finite_only) {
    auto bad = std::find_if(src.begin(), src.end(), [](float v) { return !std::isfinite(v); });
    if (bad != src.end())
      fail("quantize {}: element {} is {}; only finite values can be quantized", f.name,
           bad - src.begin(), *bad);
  }
  if (nblocks) entry->fn(src.data(), dst.data(), nblocks);
}

}  // namespace ugrad::llm
