#include "llm/quant/dequantize.h"

#include <cstring>

#include "base/error.h"
#include "llm/quant/blocks.h"
#include "llm/quant/layout.h"

namespace ugrad::llm {
namespace {

// The element-wise float types; every block format is decoded from its layout (layout.h).
using FloatFn = void (*)(const uint8_t* src, float* dst, size_t n);
void dequantize_f32(const uint8_t* src, float* dst, size_t n) {
  std::memcpy(dst, src, n * sizeof(float));  // little-endian host, as the rest of ugrad assumes
}
void dequantize_f16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = load_f16(src + 2 * i);
}
void dequantize_bf16(const uint8_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_float(load_u16(src + 2 * i));
}
FloatFn float_decoder(GgmlType t) {
  switch (t) {
    case GgmlType::F32:
      return dequantize_f32;
    case GgmlType::F16:
      return dequantize_f16;
    case GgmlType::BF16:
      return dequantize_bf16;
    default:
      return nullptr;
  }
}

}  // namespace

bool can_dequantize(GgmlType t) { return float_decoder(t) || block_layout(t); }

void dequantize(GgmlType t, std::span<const uint8_t> src, std::span<float> dst) {
  const QuantFormat& f = format_of(t);
  if (!can_dequantize(t)) fail("dequantize: type {} is not supported", f.name);
  if (dst.size() % f.block_size != 0)
    fail("dequantize {}: {} output elements is not a multiple of the block size {}", f.name,
         dst.size(), f.block_size);
  const size_t nblocks = dst.size() / f.block_size;
  if (src.size() != nblocks * f.block_bytes)
    fail("dequantize {}: {} elements need {} bytes ({} blocks of {}), got {}", f.name, dst.size(),
         nblocks * f.block_bytes, nblocks, f.block_bytes, src.size());
  if (nblocks == 0) return;
  if (const FloatFn fn = float_decoder(t)) return fn(src.data(), dst.data(), nblocks);
  decode_blocks(*block_layout(t), src.data(), dst.data(), nblocks);
}

}  // namespace ugrad::llm
