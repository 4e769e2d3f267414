// Weights as the models use them: a GGUF tensor as a lazy float tensor over its bytes, and a linear
// layer's matrix with the kernel choice of its product.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llm/gguf/gguf.h"
#include "llm/quant/int8_rows.h"
#include "llm/quant/matmul_int8.h"
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
///   CpuDot4   on a CPU with int8 dot products (x86 VNNI), a format linear_int8 takes (Q4_K,
///             Q5_K, Q6_K, IQ4_XS): one row (a decode step, the output head) runs as DOT4 over
///             a copy of the blocks reordered at load so that each vector lane stays in one
///             sub-block (reorder_linear_int8, llm/quant/linear_int8.h); and a format matmul_int8
///             takes (Q4_K, Q6_K, IQ4_XS, Q8_0): more rows (a prefill chunk) run as DOT4 over a
///             copy repacked at load (llm/quant/matmul_int8.h). Other rows the generic way (Q8_0's
///             one row: its float matvec streams the file near the read bandwidth).
///   Generic   the lazy dequantization fused into the matmul.
/// Q4_K, Q5_K, Q6_K, IQ4_XS and Q8_0 weights take their input rounded to int8 levels per 32
/// values (llm/quant/int8_rows.h) on every path, as ggml's CPU kernels do.
struct Linear {
  enum class Kernel { Generic, CpuDot4, GpuInt8 };
  Tensor weight;    // (out, in) float32, the lazy dequantization (load_weight)
  GgmlType type{};  // the file's type
  Kernel kernel = Kernel::Generic;
  Tensor blocks, words;     // CpuDot4: the blocks as uint8 and uint32; GpuInt8: the uint32 words
  PackedInt8Weight packed;  // CpuDot4 where matmul_int8 takes the weight (else undefined)
  bool wmma = false;        // GpuInt8: a chunk of rows runs matmul_wmma (the device has WMMA)
  Tensor operator()(const Tensor& x) const;
  /// The same, with x's int8 form for the GPU decode kernel: made here the first time one is
  /// needed, reused by the next linear that reads the same x (a group's members).
  Tensor operator()(const Tensor& x, std::optional<Int8Rows>& int8_x) const;
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
  /// `int8_x`: x's int8 form as the decode kernel reads it, made by the first call that needs it
  /// and reused by the next with the same x and ids (gate and up).
  Tensor operator()(const Tensor& x, const Tensor& ids, std::optional<Int8Rows>& int8_x) const;
};
ExpertLinears load_experts(const GgufTensor& t, const std::string& device,
                           const std::shared_ptr<const void>& owner = nullptr);

/// The matrix `t` as a Linear (load_weight's arguments). A linear that only ever takes one row
/// (`one_row`: the output head, which a chunk runs on its last row) keeps no prefill form.
Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner = nullptr, bool one_row = false);

/// Linears that read one input (q, k and v; gate and up): `(x)` is each member's product, in
/// order, materialized. Where the GPU int8 kernels take them, the members of one type are one
/// matrix (their rows one after another, copied onto the device once), so one launch reads them
/// all: a decode step's small matrices (k and v) alone would not fill the card, and each
/// launch costs its overhead. Each product is then a view of the fused one's columns, equal to
/// the member's own bit for bit (every output row is computed alone). Elsewhere (the CPU: the
/// file's mapping stays the weights, uncopied) each member is its own Linear.
struct LinearGroup {
  struct Part {
    size_t linear;       // index into linears
    int64_t first, out;  // its columns of that linear's product
  };
  std::vector<Linear> linears;  // the fused matrices and the members that stand alone
  std::vector<Part> parts;      // one per member
  std::vector<Tensor> operator()(const Tensor& x) const;
};
/// The matrices `ts` (each as load_linear takes it, all with the same in_features) as a group.
LinearGroup load_linears(std::span<const GgufTensor* const> ts, const std::string& device,
                         const std::shared_ptr<const void>& owner = nullptr);

}  // namespace ugrad::llm
