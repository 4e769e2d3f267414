// One description per block format: where each integer of a block lies, as bit planes, and how
// the integers make an element's value. The reference dequantizer and the quantizers' packing
// are derived from it (layout.cpp); blocks.h holds the byte offsets it is written with.
//
// A field is one integer per index i in [0, count): the element quants, or the sub-block scales
// and mins. i is split into digits over `axes` (radices, outermost first), and each plane puts
//   (byte[offset + sum(byte_stride * digit)] >> (shift + sum(shift_step * digit))) & (2^bits - 1)
// at bit `place` of the integer. A digit whose plane shifts by it is always of radix 2, so that a
// tensor form can pick the shift per half of an axis; a plane's bits never cross a byte.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "llm/quant/formats.h"

namespace ugrad::llm {

inline constexpr int kLayoutAxes = 5;

struct BitPlane {
  int64_t offset;  // byte of index 0 within the block
  int shift;       // bit of index 0 within its byte
  int bits;        // width, 1..8
  int place;       // where the bits land in the integer
  std::array<int64_t, kLayoutAxes> byte_stride;
  std::array<int, kLayoutAxes> shift_step;
};

struct Field {
  std::array<int64_t, kLayoutAxes> axes{};  // radices, outermost first; trailing zeros unused
  std::array<BitPlane, 2> planes{};
  int n_planes = 0;  // 0: the field is absent
  bool is_signed{};  // one 8-bit plane read as int8
  int bias{};        // subtracted from the assembled integer
  /// The number of axes (the nonzero radices).
  int rank() const {
    int r = 0;
    while (r < kLayoutAxes && axes[r]) ++r;
    return r;
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t a : axes) n *= a ? a : 1;
    return n;
  }
  /// The bits the planes hold at index i of the block at `block` (before the sign and the bias).
  uint8_t raw(const uint8_t* block, int64_t i) const;
  /// raw() of every index, into out[0..count()): per plane, its evenly stepped trailing axes as
  /// one run, 8 bytes at a time where the run is contiguous.
  void raw_all(const uint8_t* block, uint8_t* out) const;
  /// The integer that raw bits r stand for.
  int value(uint8_t r) const { return (is_signed ? static_cast<int8_t>(r) : r) - bias; }
  /// The integer at index i of the block at `block`.
  int read(const uint8_t* block, int64_t i) const { return value(raw(block, i)); }
  /// Stores `raw` (the bits the planes hold: before the sign and the bias) at index i of the
  /// block at `block`, leaving the block's other bits as they are.
  void store(uint8_t* block, int64_t i, int raw) const;
  /// store() of raw[0..count()), a run at a time as raw_all.
  void store_all(uint8_t* block, const uint8_t* raw) const;
};

/// How a block's super-scale is stored.
enum class ScaleKind { F16, F32, E8M0Half };
/// What a quant integer stands for: itself, or an entry of a 16-level table.
enum class Levels { Integer, IQ4NL, MXFP4 };

/// A block format:
///   value(e) = D * scale(s) * level(quant(e)) + M * min(s),   s = e / sub_block
/// D is the super-scale at `d`; M the float at `m` times `min_sign` (absent when m < 0); scale and
/// min are 1 and 0 when their fields are absent.
struct BlockLayout {
  GgmlType type;
  Field quant;
  int64_t sub_block;
  Field scale, min;
  int64_t d;
  ScaleKind d_kind;
  int64_t m;
  float min_sign;
  Levels levels;
};

/// The layout of a block format, or null (float types, formats this project does not decode).
const BlockLayout* block_layout(GgmlType type);
/// The float value of level q of `levels` (a table's index taken mod 16).
float level_value(Levels levels, int q);
/// The super-scale D of the block at `block`.
float super_scale(const BlockLayout& l, const uint8_t* block);
/// A block taken apart: D and M as stored (fp16 bits; 0 where the format has no such field), the
/// integer of each sub-block's scale and min, and the raw bits of each quant (before its bias).
struct BlockParts {
  uint16_t d = 0, m = 0;
  std::array<int, 16> scale{}, min{};
  std::array<uint8_t, 256> quant{};
};
/// The block at `block` of a format with an fp16 D taken apart.
void take_apart(const BlockLayout& l, const uint8_t* block, BlockParts& out);
/// The `count` values of the blocks at `src` (count a multiple of the block size).
void decode_blocks(const BlockLayout& l, const uint8_t* src, float* dst, size_t nblocks);

}  // namespace ugrad::llm
