#include "llm/kernels/int8_quantize.h"

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/kernel_cache.h"
#include "llm/kernels/select.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kGroup = 64;  // work-items per workgroup, one block of 32 values each

UOp build(int64_t rows, int64_t in, const std::string& name) {
  const int64_t blocks = rows * in / kInt8Block;
  KernelBuilder kb;
  View words = kb.buffer(dtypes::int32, {blocks, kInt8Block / 4});
  View scale = kb.buffer(dtypes::float32, {blocks});
  View x = kb.buffer(dtypes::float32, {blocks, kInt8Block});
  UOp i = kb.global((blocks + kGroup - 1) / kGroup) * kGroup + kb.local(kGroup);
  UOp ok = i.lt(blocks), block = ok.where(i, idx(blocks - 1));
  const std::vector<UOp> v = generate(kInt8Block, [&](int64_t e) { return x(block, e); });
  UOp amax = f32(0.0);
  for (const UOp& e : v) amax = amax.max(e.lt(f32(0.0)).where(-e, e));
  // The tensor path's arithmetic (int8_rows.cpp; a / b is a * recip(b) there): v * (127 / amax),
  // halves away from zero.
  const UOp inv = f32(0.0).lt(amax).where(f32(127.0) * amax.alu(Op::RECIP), f32(0.0));
  for (int64_t w = 0; w < kInt8Block / 4; ++w) {
    UOp word = u32(0);
    for (int64_t b = 0; b < 4; ++b) {
      const UOp s = v[4 * w + b] * inv;
      const UOp q = (s + s.lt(f32(0.0)).where(f32(-0.5), f32(0.5))).alu(Op::TRUNC);
      word = word | ((q.cast(dtypes::int32).cast(dtypes::uint32) & u32(255)) << u32(8 * b));
    }
    kb.store(words.at(block, w), bitcast(word, dtypes::int32), ok);
  }
  kb.store(scale.at(block), amax * f32(1.0 / 127.0), ok);
  return kb.build(name);
}

}  // namespace

UOp int8_quantize_kernel(int64_t rows, int64_t in) {
  if (rows < 1 || in < 1 || in % kInt8Block != 0)
    fail("int8_quantize: need (rows, in) with in a multiple of {}, got ({}, {})", kInt8Block, rows,
         in);
  const std::string name = fmt::format("int8_quantize_{}x{}", rows, in);
  return cached_kernel(name, [&] { return build(rows, in, name); });
}

Int8Rows int8_quantize(const Tensor& x) {
  if (x.ndim() != 2 || !select(device_features(x.device()), KernelNeeds{}))
    return quantize_rows_int8(x);
  const int64_t rows = x.size(0), in = x.size(1);
  std::vector<Tensor> out =
      custom_kernel(int8_quantize_kernel(rows, in),
                    {Tensor::empty({rows, in / 4}, dtypes::int32, x.device()),
                     Tensor::empty({rows, in / kInt8Block}, dtypes::float32, x.device()),
                     x.cast(dtypes::float32)});
  return Int8Rows{out[0], out[1], Tensor(), Tensor(), Tensor(), Tensor()};
}

}  // namespace ugrad::llm
