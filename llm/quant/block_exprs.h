// Lazy tensor expressions over quant blocks: the pieces the dequantizers (lazy_dequant.cpp) and
// the int8 linears (linear_int8.cpp) read a format's bytes with.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "llm/quant/layout.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

// Expressions over a (n_blocks, block_bytes) uint8 tensor of blocks.
class Blocks {
 public:
  explicit Blocks(Tensor b) : b_(std::move(b)), n_(b_.dims()[0]) {}
  int64_t n() const { return n_; }
  const std::string& device() const { return b_.device(); }
  /// Bytes [off, off+len) of every block: (n, len) uint8.
  Tensor bytes(size_t off, int64_t len) const {
    return b_.shrink({{0, n_}, {static_cast<int64_t>(off), static_cast<int64_t>(off) + len}});
  }
  /// Little-endian u16 at off: (n, 1) uint16.
  Tensor u16(size_t off) const {
    return bytes(off, 1).cast(dtypes::uint16) + bytes(off + 1, 1).cast(dtypes::uint16) * 256;
  }
  /// Little-endian u32 at off: (n, 1) uint32.
  Tensor u32(size_t off) const {
    Tensor v = bytes(off, 1).cast(dtypes::uint32);
    for (int i = 1; i < 4; ++i)
      v = v + bytes(off + i, 1).cast(dtypes::uint32) * (int64_t{1} << (8 * i));
    return v;
  }
  /// fp16 at off as float32: (n, 1).
  Tensor f16(size_t off) const { return u16(off).bitcast(dtypes::float16).cast(dtypes::float32); }

 private:
  Tensor b_;
  int64_t n_;
};

/// True in the upper half of axis `axis` of `dims`, false in the lower: a padded constant, no
/// buffer, so a per-element choice stays index math (a vector select) instead of a table load.
Tensor upper_half(const std::vector<int64_t>& dims, size_t axis, const std::string& device);
/// x in the lower half of `axis`, x >> shift in the upper half.
Tensor shift_upper(const Tensor& x, size_t axis, int shift);
/// The table `name` on `device`, made by `make` on first use and kept: a buffer that host values
/// are copied into, so it costs no kernel (a table computed by a kernel inside a graph the JIT
/// captures would be computed again by every replay) and is made once, not per use.
Tensor constant_table(const std::string& name, const std::string& device,
                      const std::function<Tensor(const std::string& device)>& make);
/// An int tensor of values in [0, 64) as float32, read from a table of 0..63.
Tensor six_bit_floats(const Tensor& v);
/// Field f (layout.h) of every block as (n, axes...), its sign and bias applied (`work`, int8 if
/// signed, int32 with a bias): each plane a view of its bytes broadcast over the axes it does not
/// step, its bits taken apart in `work` (uint8 or a wider unsigned type: other vector
/// instructions), shifted per half of the axes that move its shift (with `concat`, where the
/// outermost axis alone moves it, the field's two halves concatenated), masked and placed.
Tensor field_tensor(const Blocks& b, const Field& f, DType work = dtypes::uint8,
                    bool concat = false);

}  // namespace ugrad::llm
