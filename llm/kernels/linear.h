// Weights as the models use them: a GGUF tensor as a lazy float tensor over its bytes, and a linear
// layer's matrix with the kernel choice of its product.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "llm/gguf/gguf.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// A GGUF matrix [ne0 = in, ne1 = out] as a lazy (out, in) float32 tensor over its raw bytes, a
/// vector [n] as (n,): dequantized inside whatever kernel consumes it. On the CPU the bytes are
/// the file's mapping itself (no copy), kept alive by `owner` (GgufFile::keepalive(); null: the
/// caller keeps the file open as long as the tensor lives).
Tensor load_weight(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner = nullptr);

/// A linear layer's GGUF matrix; `(x)` is x (rows, in) times its transpose, by the kernel the
/// device and shape qualify for (LLM_KERNELS=0: always the generic one):
///   GpuInt8   a GPU with int8 dot products, a format matvec_int8 takes: up to kMatvecMaxRows
///             rows run the hand-written decode kernel (llm/kernels/matvec_int8.h) over x
///             quantized to int8 per 32 values; up to kWmmaRows (a prefill chunk) the WMMA
///             kernel (matmul_wmma.h) over x in f16 where out is a multiple of 16; the device
///             holds the weight once, as uint32 words, which the generic path (more rows, or
///             other shapes) reads its bytes from.
///   CpuDot4   Q4_K on a CPU with int8 dot products (x86 VNNI): one row (a decode step, the
///             output head) runs as DOT4 over the blocks themselves (the file's mapping).
///   Generic   the lazy dequantization fused into the matmul.
/// A Q4_K weight takes its input rounded to int8 levels per 32 values (llm/quant/int8_rows.h)
/// on every path, as ggml's CPU kernels do.
struct Linear {
  enum class Kernel { Generic, CpuDot4, GpuInt8 };
  Tensor weight;    // (out, in) float32, the lazy dequantization (load_weight)
  GgmlType type{};  // the file's type
  Kernel kernel = Kernel::Generic;
  Tensor blocks, words;  // CpuDot4: the blocks as uint8 and uint32; GpuInt8: the uint32 words
  Tensor operator()(const Tensor& x) const;
};
/// A mixture-of-experts GGUF tensor [in, out, E] as the experts' linears; `(x, ids)` with ids
/// (rows, k) the chosen experts is, for each token r and slot s, x's row r (x (rows, in): one
/// input per token) or row (r, s) (x (rows, k, in)) times the transpose of expert ids[r, s]:
/// (rows, k, out). On a GPU with int8 dot products and a format matvec_int8 takes, up to
/// kMatvecMaxExpertRows (token, slot) pairs (a decode step) run the decode kernel over the
/// experts' words; else (and LLM_KERNELS=0) the generic path: the chosen experts' lazy
/// dequantization, gathered (index_select) into one product kernel that reads only their bytes.
struct ExpertLinears {
  Tensor weight;    // (E, out, in) float32, the lazy dequantization
  GgmlType type{};  // the file's type
  Tensor words;     // GPU int8 kernel: the experts' bytes as uint32 words (else undefined)
  Tensor operator()(const Tensor& x, const Tensor& ids) const;
};
ExpertLinears load_experts(const GgufTensor& t, const std::string& device,
                           const std::shared_ptr<const void>& owner = nullptr);

/// The matrix `t` as a Linear (load_weight's arguments).
Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner = nullptr);

}  // namespace ugrad::llm
