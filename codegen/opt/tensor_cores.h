// Tensor cores on RDNA3 (gfx11, wave32): a matmul reduction becomes WMMA 16x16x16 tiles.
// Eligible: one STORE whose value holds one REDUCE ADD over a single reduce range k (constant,
// K % 16 == 0) of MUL(a, b), a and b each a LOAD of f16 or bf16 (optionally CAST to f32), a
// depending on k and one output range m, b on k and one output range n (M, N % 16 == 0); other
// output ranges (batch) may appear in both.
// Lowering (one wave of 32 lanes per 16x16 output tile; lane = workitem id, row = lane % 16):
//   A fragment  a[m = 16*tm + row, k = 16*k0 + j], j = 0..15   (lanes 16..31 repeat 0..15: gfx11)
//   B fragment  b[k = 16*k0 + j, n = 16*tn + row]
//   C/D         8 floats per lane: element i is C[m = 16*tm + 2*i + lane/16, n = 16*tn + row]
// The 8 accumulators are REDUCEs of GEP(WMMA(A, B, 0), i); after lower_reduces,
// fuse_wmma_accumulate folds acc + WMMA(A, B, 0) into WMMA(A, B, acc).
#pragma once
#include <cstdint>
#include <optional>

#include "uop/uop.h"

namespace ugrad {

/// WMMA tile edge (M = N = K = 16) and the wave size it needs.
inline constexpr int64_t kWmmaTile = 16;
inline constexpr int64_t kWmmaWave = 32;

/// The reduce axis of an eligible matmul in `ast`, if any.
std::optional<int64_t> tensor_core_axis(const UOp& ast);

/// Rewrites the eligible matmul over reduce `axis` into WMMA tiles; Error when not eligible.
UOp tensor_cores(const UOp& ast, int64_t axis);

/// acc_i + GEP(WMMA(a, b, 0), i) for i = 0..7 -> GEP(WMMA(a, b, VECTORIZE(acc_0..7)), i).
/// A walk over the whole graph: a WMMA is fused only once all 8 of its element sums are found.
UOp fuse_wmma_accumulate(const UOp& lowered);

/// WMMA(a, b, c): a and b <16 x f16|bf16>, c <8 x f32> -> <8 x f32> (a UOp with the shape arg).
UOp wmma(const UOp& a, const UOp& b, const UOp& c);

}  // namespace ugrad
