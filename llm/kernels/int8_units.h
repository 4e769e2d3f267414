// How each quant format's weights enter int8 dot products in a hand-written kernel: a row's
// blocks split into units, one unit per lane and step, each read as 16 bytes (32 for Q8_0) of the
// block's quants that consecutive lanes take consecutively: 32 elements of a 4-bit format, 64 of
// a 2- or 3-bit one. A unit is pieces of 16 elements (2 or 4); a piece is 4 words of
// levels (one byte each, int8 or uint8 as the format says), the elements they stand for, and the
// float scale and min of their sub-block:
//   value = scale * level - min
// so that a piece's share of a dot product with int8 activations x is
//   scale * dot4(levels, x) - min * dot4(1, x)       (integer dot products, float scaling once)
// The block layouts are llm/quant/blocks.h; docs/quants.md has the element order per format.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "codegen/kernel_builder.h"
#include "llm/quant/formats.h"
#include "llm/quant/layout.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// Byte reads of one quant block from a kernel buffer of uint32 words (the matrix's bytes).
struct BlockBytes {
  View words;       // the uint32 buffer parameter
  UOp start;        // the block's first byte (an index expression)
  bool aligned4{};  // whether every block starts at a multiple of 4 bytes
  /// uint32 of bytes [start + off, start + off + 4), off even (and a multiple of 4 if aligned4,
  /// with `off_aligned`: one load; else two, shifted together).
  UOp word(const UOp& off, bool off_aligned) const;
  /// words[i], where `gate` (if given) is true (else 0, touching no memory).
  UOp load(const UOp& i, const UOp& gate = UOp()) const;
  UOp word(int64_t off) const;
  /// The fp16 at `off` (even), as float32.
  UOp f16(int64_t off) const;
};

struct UnitPiece {
  std::array<UOp, 4> levels;  // int32 words of 4 levels each, little-endian
  UOp element;                // index of the first of the 16 elements within the block
  UOp scale;                  // float32
  UOp min;                    // float32, or none (a format without mins)
};
using Unit = std::vector<UnitPiece>;

/// An int8-dot form of a quant format.
struct UnitFormat {
  GgmlType type;
  int units_per_block;  // units in a block (each block_size / units_per_block elements)
  const BlockLayout* layout;
  /// Whether the levels are int8 (else uint8).
  bool signed_levels() const { return layout->quant.is_signed || uses_table(); }
  /// Whether the levels are looked up in a 256-entry table (unit_table).
  bool uses_table() const { return layout->levels != Levels::Integer; }
  /// Unit `j` (an index expression in [0, units_per_block)) of the block `b`, read as the
  /// format's layout (llm/quant/layout.h) says. `table` is the table as an LDS array when
  /// uses_table.
  Unit unit(const BlockBytes& b, const UOp& j, const View& table) const;
};

/// The form of `type`, or null when it has none.
const UnitFormat* unit_format(GgmlType type);

/// The table parameter `table` (unit_table) copied into LDS by work-items `thread` of `threads`
/// (a multiple of 256 or a divisor), as the array to read after the barrier.
View table_in_lds(KernelBuilder& kb, const View& table, const UOp& thread, int64_t threads);

/// A row of `in` elements of a format with a form, as the kernels walk it.
struct UnitRow {
  int64_t block_elems, block_bytes, row_bytes;
  int64_t units;  // units in the row
};
UnitRow unit_row(const UnitFormat& f, int64_t in);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Whether rows of `in` elements of `type` read as units: a format with a form, `in` a multiple
/// of 256 (the reference implementation's gate) and a row a whole number of 4-byte words.
bool reads_as_units(GgmlType type, int64_t in);

/// The lookup table of a format with uses_table as a uint32 tensor on `device` (made once per
/// device): entry q (a quant byte) holds the levels of its low and high nibble in bytes 0 and 1.
Tensor unit_table(GgmlType type, const std::string& device);

}  // namespace ugrad::llm
