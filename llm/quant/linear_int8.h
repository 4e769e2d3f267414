// Quantized linears as int8 dot products (DOT4: x86 vpdpbusd) of one or a few rows of int8
// activations (llm/quant/int8_rows.h) with the weight's levels, 4 per 32-bit word: the lazy form
// of a decode step's product on CPUs with int8 dot products. The file's blocks have no vector
// form whose lanes each stay in one sub-block (a file word's fields belong to elements 16 or 32
// apart), so linear_int8 reads a copy made at load (reorder_linear_int8) in groups of 16 lanes,
// lane l one sub-block: a lane's DOT4s add up in int32 over the sub-block, and its float factors
// (d, the sub-block scale, x's scale; Q4_K/Q5_K's min, Q6_K's and IQ4_XS's level offset) are one
// vector per group. x's words are read in the same order (linear_int8_x_words).
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "llm/quant/formats.h"
#include "llm/quant/int8_rows.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// The lanes of a group: the words of one 512-bit vector.
inline constexpr int64_t kLinearInt8Lanes = 16;

/// A format's copy as linear_int8 reads it: per group of 16 lanes (a pair of a row's blocks for
/// Q4_K, Q5_K and IQ4_XS, one block for Q6_K), lane l being sub-block l % (16 / blocks) of block
/// l / (16 / blocks), of 4 * steps elements:
///   d       at `d`: a word of the blocks' fp16 d, the first block's in the low half (Q6_K's
///           high half unused)
///   dmin    at `dmin`: a word of the blocks' fp16 dmin (Q4_K, Q5_K)
///   scales  at `scales`: 16 int8, lane l's (Q4_K/Q5_K 0..63; Q6_K the file's; IQ4_XS ls - 32:
///           the file's bit fields cost ~7 scalar instructions per scale in a kernel bound by
///           instruction issue)
///   mins    at `mins`: 16 int8, lane l's (Q4_K, Q5_K)
///   codes   at `codes`: 8 * steps words; nibble s % 2 of byte b of word 16 (s / 2) + l holds the
///           low 4 bits of lane l's element 4s + b (IQ4_XS: its code, an index into its table)
///   high    at `high`: 16 words (Q5_K, Q6_K); byte b of word l holds from bit high_bits * s up the
///           bits above the nibble of lane l's element 4s + b
/// A level minus `offset` (Q6_K 32; IQ4_XS's table is read plus 128, since vpdpbusd takes the
/// weight's bytes unsigned) is the element's quant.
struct LinearInt8Layout {
  GgmlType type;
  int64_t blocks, steps;
  int high_bits;
  bool has_mins;
  int offset;
  size_t d, dmin, scales, mins, codes, high, bytes;
};
/// The layout of a `type` copy; an Error names a type linear_int8 does not take.
const LinearInt8Layout& linear_int8_layout(GgmlType type);

/// Whether linear_int8 takes a `type` weight with rows of `in` elements: Q4_K, Q5_K and IQ4_XS
/// (groups of two blocks) with `in` a multiple of 512, Q6_K of 256.
bool linear_int8_supports(GgmlType type, int64_t in);

/// The copy of `blocks` (whole groups of `type` blocks, each group within a row; an Error names
/// another size) that linear_int8 reads: linear_int8_layout(type).bytes per group, in huge pages
/// (base/huge_pages.h), made by the thread pool.
std::shared_ptr<std::byte> reorder_linear_int8(GgmlType type, std::span<const std::byte> blocks);

/// Whether a linear of `type` takes its input rounded to int8 levels (llm/quant/int8_rows.h) on
/// every path, whatever kernel runs it: the formats with an int8 form (Q4_K, Q5_K, Q6_K, IQ4_XS)
/// and Q8_0 (matmul_int8.h), so that a model computes the same products in a decode step and in
/// a prefill chunk.
bool int8_activations(GgmlType type);

/// The bytes of reorder_linear_int8's copy of an (out, in) `type` weight.
int64_t linear_int8_bytes(GgmlType type, int64_t out, int64_t in);

/// x's words (rows, in / 4) int32 in the order linear_int8 reads a `type` weight's groups: per
/// group, for s = 0..steps-1, word s of each of its 16 lanes (`in` a multiple of the group's
/// elements; an Error names another).
Tensor linear_int8_x_words(const Int8Rows& x, GgmlType type);

/// x's rows times the transpose of the (out, in) `type` weight, (rows, out) float32. `raw` holds
/// reorder_linear_int8's copy as uint8, `words` the same memory as uint32; errors name the type
/// and sizes.
Tensor linear_int8(const Int8Rows& x, GgmlType type, const Tensor& raw, const Tensor& words,
                   int64_t out, int64_t in);

}  // namespace ugrad::llm
