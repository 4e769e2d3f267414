// The decode kernel of a quantized linear layer: a few rows of activations, quantized to int8
// once (llm/quant/int8_rows.h), times the transpose of a quantized (out, in) weight, as int8 dot
// products of 4 bytes (v_dot4 on RDNA3) against the weight's integers unpacked in registers
// (llm/kernels/int8_units.h), each half-sub-block's scale and min applied once in float.
//
// One wave per output feature: lane l takes the row's 32-element units l, l + 32, ... (16 or 32
// consecutive quant bytes each, so a wave's loads cover consecutive bytes), sums its units' shares
// in float, and the 32 partial sums meet through LDS. Up to kMatvecMaxRows rows share each weight
// load; a mixture of experts' rows, each with its own expert, take one wave per (row, output).
#pragma once
#include <cstdint>

#include "llm/kernels/select.h"
#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Most activation rows of one launch: rows sharing one weight, and rows each with its expert.
inline constexpr int64_t kMatvecMaxRows = 8;
inline constexpr int64_t kMatvecMaxExpertRows = 64;

/// What the kernel needs for a `type` weight of (out, in) (none: not a format with an int8 form,
/// `in` not a multiple of 256 or rows not whole 4-byte words).
std::optional<KernelNeeds> matvec_int8_needs(GgmlType type, int64_t out, int64_t in);

/// The kernel's AST for `rows` rows; slots: y (rows, out) float32, the weight's bytes as uint32
/// words, x's levels (rows, in/4) int32, x's scales (rows, in/32) float32, then, with `experts`
/// (> 0: the weight is that many (out, in) matrices, row r times matrix ids[r]), the ids (rows)
/// int32, then (IQ4_XS) the 256-entry level table (unit_table) as uint32.
UOp matvec_int8_kernel(GgmlType type, int64_t rows, int64_t out, int64_t in, int64_t experts = 0);

/// x (rows <= kMatvecMaxRows, in) times the transpose of the (out, in) `type` weight whose bytes
/// are `words` (uint32), (rows, out) float32. With `ids` (rows int32 ids in [0, experts), rows <=
/// kMatvecMaxExpertRows), `words` holds `experts` such matrices and row r takes matrix ids[r]
/// (a mixture of experts' chosen experts).
Tensor matvec_int8(const Int8Rows& x, const Tensor& words, GgmlType type, int64_t out, int64_t in,
                   const Tensor& ids = Tensor(), int64_t experts = 0);

}  // namespace ugrad::llm
