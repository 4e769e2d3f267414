// A prefill chunk's product with a Q4_K weight as int8 dot products (DOT4: x86 vpdpbusd) over the
// weight repacked once at load. The vector lanes run along a weight row's pairs of sub-blocks (a
// pair is one 32-byte run of a super-block's nibbles: the low nibbles are sub-block 2j, the high
// ones 2j+1), so each lane sums its two sub-blocks' 8 words of products in int32 (a chain of
// vpdpbusd) and converts and scales once per sub-block. The matvec form (linear_int8.h) reads the
// file's blocks, where a lane's words belong to different sub-blocks: it converts and scales every
// word, which costs a chunk of rows more than the float path saves.
//
// With G = in / 64 pairs per row, the repacked weight is
//   words  (out, 8, G) uint32: word w of each pair (4 levels of each of its two sub-blocks)
//   scales (out, 2, G) float32: d * sc of the pair's low and high sub-block
//   mins   (out, 2, G) float32: dmin * m of the same
// and x's int8 rows (int8_rows.h) are permuted alike: words (rows, 16, G), scale and sum32
// (rows, 2, G). The products are those of the float path over the rounded rows
// (round_rows_int8), summed in another order.
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
  Tensor words, scales, mins;
};

/// Whether matmul_int8 takes a `type` weight with rows of `in` elements: Q4_K with `in` a
/// multiple of 64 * kMatmulInt8Pairs.
bool matmul_int8_supports(GgmlType type, int64_t in);

/// The (out, in) `type` weight's blocks repacked on the host (in parallel) onto `device`; errors
/// name the type and sizes when the blocks do not make such a weight.
PackedInt8Weight pack_matmul_int8(GgmlType type, std::span<const std::byte> blocks, int64_t out,
                                  int64_t in, const std::string& device);

/// x's rows times the transpose of the packed weight: (rows, out) float32.
Tensor matmul_int8(const Int8Rows& x, const PackedInt8Weight& w);

}  // namespace ugrad::llm
