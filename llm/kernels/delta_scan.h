// The gated delta rule (delta_rule.h) of a chunk as one hand-written kernel (codegen/
// kernel_builder.h; it also runs on the CPU, which is how the tests compare it everywhere): one
// work-item per (value head, value dim j) keeps column j of the head's state, d_k floats, in
// registers for the whole chunk, reads the chunk's q, k, v, beta and decay once (q and k
// through LDS, shared by the head's work-items), writes each row's output once and the final
// column back in place. At start_pos 0 (a kernel parameter) the chunk starts from a zero state
// without reading the old one. Column j evolves alone:
//   p = S_j . k,  u = beta (v_j - decay p),  out_j = decay (S_j . q) + u (k . q),
//   S_j <- decay S_j + u k
// A padded row (beta 0, log decay 0) multiplies by exp2(0) = 1 and adds 0 x finite: the state
// stays as it was, bit for bit.
#pragma once
#include <cstdint>

#include "llm/kernels/select.h"
#include "tensor/tensor.h"
#include "uop/uop.h"

namespace ugrad::llm {

/// What the kernel needs for `rows` rows of value heads of d_k and d_v: the chunk's q and k, three
/// times d_k floats a row, in LDS (none: d_v past a workgroup's 1024 work-items).
std::optional<KernelNeeds> delta_scan_needs(int64_t rows, int64_t dk, int64_t dv);

/// The kernel's AST for `rows` rows of `heads` value heads and the variable start_pos in
/// [0, max_pos] (cached by name).
UOp delta_scan_kernel(int64_t rows, int64_t heads, int64_t dk, int64_t dv, int64_t max_pos);

/// gated_delta_rule (delta_rule.h) by the kernel: the same arguments (start_pos the bound
/// variable "start_pos") and result; `state` (heads, d_v, d_k) float32 is overwritten in place.
Tensor delta_scan(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& beta, const Tensor& log_decay, const UOp& start_pos);

}  // namespace ugrad::llm
