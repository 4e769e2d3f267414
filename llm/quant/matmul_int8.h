// A prefill chunk's product with a Q4_K, Q6_K, IQ4_XS or Q8_0 weight as int8 dot products (DOT4:
// x86 vpdpbusd) over the weight repacked once at load. The vector lanes run along a weight row's
// pairs of 32-value sub-blocks (64 consecutive values), so each lane sums a sub-block's words of
// products in int32 (a chain of vpdpbusd) and converts and scales once per sub-block (Q6_K: per 16
// values). The matvec form (linear_int8.h) reads its own copy, a lane per sub-block across a group
// of 16 sub-blocks, whose x words are reordered to match.
//
// With G = in / 64 pairs per row, the repacked weight is
//   words  (out, W, G) uint32: 8 nibble words per pair, byte k of word w holding level 4w + k of
//          the low sub-block (low nibble) and of the high one (Q4_K's own layout; IQ4_XS's are
//          the codes its table maps to levels); Q6_K adds 4 words of the levels' high 2 bits
//          (pack_q6_k): W = 8 or 12. Q8_0: 8 words of the low block's quants plus 128 as bytes,
//          then 8 of the high one's: W = 16
//   scales (out, S, G) float32: d * sc per sub-block (Q4_K, IQ4_XS: S = 2), d per block (Q8_0,
//          S = 2) or per 16 values (Q6_K, S = 4)
//   mins   (out, 2, G) float32: Q4_K's dmin * m per sub-block (Q6_K's offset 32 and IQ4_XS's and
//          Q8_0's 128 are constants)
// 48 (Q4_K), 64 (Q6_K), 40 (IQ4_XS) or 72 (Q8_0) bytes per 64 values, beside the file's 36, 52.5,
// 34 or 68. x's int8 rows (int8_rows.h) are laid out alike (Int8Pairs), straight from its levels.
// The products are those of the float path over the rounded rows (round_rows_int8), summed in
// another order.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Pairs of sub-blocks per vector lane group the repacked layout is made for: `in` must give a
/// multiple of 8 pairs (8 lanes; 16 where it gives a multiple of 16).
inline constexpr int64_t kMatmulInt8Pairs = 8;

/// A weight repacked for matmul_int8 (the layout above).
struct PackedInt8Weight {
  GgmlType type{};
  Tensor words, scales, mins;  // mins: Q4_K only
};

/// Whether matmul_int8 takes a `type` weight with rows of `in` elements: Q4_K, Q6_K, IQ4_XS and
/// Q8_0 with `in` a multiple of 64 * kMatmulInt8Pairs.
bool matmul_int8_supports(GgmlType type, int64_t in);

/// Bytes of the repacked (out, in) `type` weight (matmul_int8_supports).
int64_t packed_bytes(GgmlType type, int64_t out, int64_t in);

/// The (out, in) `type` weight's blocks repacked on the host (in parallel) onto `device`; errors
/// name the type and sizes when the blocks do not make such a weight.
PackedInt8Weight pack_matmul_int8(GgmlType type, std::span<const std::byte> blocks, int64_t out,
                                  int64_t in, const std::string& device);

/// x's int8 rows laid out for matmul_int8, G = in / 64 pairs per row.
struct Int8Pairs {
  Tensor words;  // (rows, 16, G) int32: a pair's words of levels, 8 of its low sub-block, 8 high
  Tensor sums;   // (rows, 8, G) float32: the low and high sub-block's scale, their sum32, then
                 // the sums of 16 (int8_rows.h) of the low sub-block and of the high one
};
/// x (rows, in) float32, `in` a multiple of 64, quantized (int8_rows.h) and laid out: two
/// kernels over the levels.
Int8Pairs quantize_pairs_int8(const Tensor& x);

/// x's rows times the transpose of the packed weight: (rows, out) float32.
Tensor matmul_int8(const Int8Pairs& x, const PackedInt8Weight& w);

}  // namespace ugrad::llm
