// Quantized linears as int8 dot products (DOT4: x86 vpdpbusd) of a few rows of int8 activations
// (llm/quant/int8_rows.h) with the weight's quants unpacked 4 per 32-bit word, scaled per
// sub-block in float: the lazy form of a decode step's product on CPUs with int8 dot products.
// The K formats' levels are unsigned (Q4_K, Q5_K: 0..31 with a min per sub-block; Q6_K: 0..63,
// offset by 32), each offset a term per sub-block over x's level sums; their vectors are 8 words
// wide (a file word's fields are level words 8 or more apart). IQ4_XS's codes select levels from
// a table (BYTE_LUT) offset by 128 likewise, and its blocks are read from a copy reordered in
// pairs (reorder_iq4_xs) so that each lane of a 16-word vector stays in one sub-block: a lane's
// DOT4s add up in integers and its scale is one float product per pair of blocks, with x's words
// read in the same order (iq4_xs_x_words).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Whether linear_int8 takes a `type` weight with rows of `in` elements: Q4_K and Q5_K with `in`
/// a multiple of 256, Q6_K (its 210-byte blocks pair up into whole words) and IQ4_XS (read in
/// pairs of blocks) a multiple of 512.
bool linear_int8_supports(GgmlType type, int64_t in);

/// An IQ4_XS block's 256 codes (4-bit indices into its level table) in element order, written to
/// `codes`.
void iq4_xs_codes(const uint8_t* block, uint8_t* codes);
/// IQ4_XS blocks as linear_int8 reads them (reorder_iq4_xs), a pair of a row's blocks in 280
/// bytes where the file has 272: the two d widened to float32, the 16 sub-block scales ls - 32 as
/// int8 (block m's sub-block j at 8m + j; the file packs them in bit fields, ~7 scalar instructions
/// per scale to unpack in a kernel bound by instruction issue), then 64 words of codes: byte b of
/// word 16g + l holds, for lane l (sub-block l % 8 of block l / 8), element 8g + b of the
/// sub-block in its low nibble (step 2g) and element 8g + 4 + b in its high one (step 2g + 1).
namespace iq4_xs_reordered {
inline constexpr size_t kD = 0, kScales = 8, kQs = 24, kBytes = 280;
}
/// The reordered copy of `blocks` (whole pairs of IQ4_XS blocks, each pair within a row; an Error
/// names another size): their pairs times iq4_xs_reordered::kBytes, in huge pages
/// (base/huge_pages.h), made by the thread pool.
std::shared_ptr<std::byte> reorder_iq4_xs(std::span<const std::byte> blocks);

/// Whether a linear of `type` takes its input rounded to int8 levels (llm/quant/int8_rows.h) on
/// every path, whatever kernel runs it: the formats with an int8 form (Q4_K, Q5_K, Q6_K, IQ4_XS),
/// so that a model computes the same products in a decode step and in a prefill chunk.
bool int8_activations(GgmlType type);

/// The bytes linear_int8 reads for an (out, in) `type` weight: the file's, or (IQ4_XS)
/// reorder_iq4_xs's.
int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in);

/// x's words (rows, in / 4) int32 in the order linear_int8 reads IQ4_XS's reordered pairs of
/// blocks: per 512 values, for s = 0..7, word s of each of the 16 sub-blocks of 32 (`in` a
/// multiple of 512; an Error names another).
Tensor iq4_xs_x_words(const Int8Rows& x);

/// x's rows times the transpose of the (out, in) `type` weight, (rows, out) float32. `raw` holds
/// the blocks as uint8 (IQ4_XS's as reorder_iq4_xs makes them), `words` the same memory as uint32;
/// errors name the type and sizes.
Tensor linear_int8(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                   int64_t out, int64_t in);

}  // namespace ugrad::llm
