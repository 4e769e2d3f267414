// The one kernel selection (llm/kernels/select.h): each family's needs against a device's
// features, and LLM_KERNELS.
#include <doctest/doctest.h>

#include "base/env.h"
#include "llm/kernels/delta_scan.h"
#include "llm/kernels/flash_attention.h"
#include "llm/kernels/matmul_wmma.h"
#include "llm/kernels/matvec_int8.h"

namespace ugrad::llm {

TEST_CASE("select: a family runs where the device has what it needs") {
  const DeviceFeatures gfx = device_features("NULL:gfx1100");
  const auto matvec = matvec_int8_needs(GgmlType::Q4_K, 4096, 4096);
  const auto wmma = matmul_wmma_needs(GgmlType::Q4_K, 4096, 4096);
  const auto wmma_table = matmul_wmma_needs(GgmlType::IQ4_XS, 4096, 4096);
  CHECK(select(gfx, matvec));
  CHECK(select(gfx, wmma));
  CHECK(!select(gfx, std::nullopt));               // a shape the family does not take
  CHECK(!select(device_features("CPU"), matvec));  // not a GPU
  DeviceFeatures f = gfx;
  f.wmma = false;  // an RDNA2 card: the decode kernel, not the WMMA one
  CHECK(select(f, matvec));
  CHECK(!select(f, wmma));
  f = gfx;
  f.int8_dot = false;
  CHECK(!select(f, matvec));
  f = gfx;
  f.wave_size = 64;  // the kernels' lanes are a wave32's
  CHECK(!select(f, matvec));
  f = gfx;
  f.lds_bytes = wmma->lds_bytes;  // the LDS the device has, exactly what one needs
  CHECK(select(f, wmma));
  CHECK(!select(f, wmma_table));  // the level table needs 1 KiB more
  // The flash-attention WMMA form follows the device too: without WMMA, q stays float32.
  CHECK(flash_attention_half_query(32, 32, 8, 128, gfx));
  f = gfx;
  f.wmma = false;
  CHECK(!flash_attention_half_query(32, 32, 8, 128, f));
  ScopedKnob off(Knob::LLM_KERNELS, "0");
  CHECK(!select(gfx, matvec));
  CHECK(!select(gfx, delta_scan_needs(1, 128, 128)));
}

}  // namespace ugrad::llm
