// Quantized linears as int8 dot products (DOT4: x86 vpdpbusd) of a few rows of int8 activations
// (llm/quant/int8_rows.h) with the weight's quants unpacked 4 per 32-bit word, scaled per
// sub-block in float: the lazy form of a decode step's product on CPUs with int8 dot products.
// The K formats' levels are unsigned (Q4_K, Q5_K: 0..31 with a min per sub-block; Q6_K: 0..63,
// offset by 32), each offset a term per sub-block over x's level sums. IQ4_XS's codes select
// levels from a table (BYTE_LUT) offset by 128 likewise; its blocks are read reordered
// (reorder_iq4_xs): in the file a word's low and high nibbles are elements 16 apart, so x's 8
// words of a sub-block would pair with its 4 words twice, which leaves no contiguous vector lanes.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Whether linear_int8 takes a `type` weight with rows of `in` elements: Q4_K, Q5_K and IQ4_XS
/// with `in` a multiple of 256, Q6_K a multiple of 512 (its 210-byte blocks pair up into whole
/// words).
bool linear_int8_supports(GgmlType type, int64_t in);

/// An IQ4_XS block's 256 codes (4-bit indices into its level table) in element order, written to
/// `codes`.
void iq4_xs_codes(const uint8_t* block, uint8_t* codes);
/// IQ4_XS blocks as linear_int8 reads them (reorder_iq4_xs), 140 bytes where the file has 136: d
/// widened to float32, the 8 sub-block scales ls - 32 as int8 (the file packs them in 6 bytes of
/// bit fields, ~7 scalar instructions per scale to unpack in a kernel bound by instruction issue),
/// then the 128 bytes of codes: byte b of half h (b < 64) holds element 128h + b in its low nibble
/// and 128h + 64 + b in its high one (16 words of a half are then 16 lanes of one sub-block
/// pair's levels).
namespace iq4_xs_reordered {
inline constexpr size_t kD = 0, kScales = 4, kQs = 12, kBytes = 140;
}
/// The reordered copy of `blocks` (whole IQ4_XS blocks; an Error names another size): their
/// count times iq4_xs_reordered::kBytes, in huge pages (base/huge_pages.h), made by the thread
/// pool.
std::shared_ptr<std::byte> reorder_iq4_xs(std::span<const std::byte> blocks);

/// Whether a linear of `type` takes its input rounded to int8 levels (llm/quant/int8_rows.h) on
/// every path, whatever kernel runs it: the formats with an int8 form (Q4_K, Q5_K, Q6_K, IQ4_XS),
/// so that a model computes the same products in a decode step and in a prefill chunk.
bool int8_activations(GgmlType type);

/// The bytes linear_int8 reads for an (out, in) `type` weight: the file's, or (IQ4_XS)
/// reorder_iq4_xs's.
int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in);

/// x's rows times the transpose of the (out, in) `type` weight, (rows, out) float32. `raw` holds
/// the blocks as uint8 (IQ4_XS's as reorder_iq4_xs makes them), `words` the same memory as uint32;
/// errors name the type and sizes.
Tensor linear_int8(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                   int64_t out, int64_t in);

}  // namespace ugrad::llm
