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

/// A linear layer's GGUF matrix; `(x)` is x (rows, in) times its transpose. A Q4_K weight takes its
/// input rounded to int8 levels per 256 values (llm/quant/int8_rows.h), as ggml's CPU kernels do:
/// on a CPU with int8 dot products (x86 VNNI) one row (a decode step, the output head) runs as
/// DOT4 over the blocks themselves; more rows run the float kernel over the rounded input.
struct Linear {
  Tensor weight;         // (out, in) float32, the lazy dequantization (load_weight)
  GgmlType type{};       // the file's type
  Tensor blocks, words;  // Q4_K with DOT4 rows: the blocks as uint8 and uint32, the same memory
  Tensor operator()(const Tensor& x) const;
};
/// The matrix `t` as a Linear (load_weight's arguments).
Linear load_linear(const GgufTensor& t, const std::string& device,
                   const std::shared_ptr<const void>& owner = nullptr);

}  // namespace ugrad::llm
