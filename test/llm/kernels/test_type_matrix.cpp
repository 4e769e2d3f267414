// Every ggml type ugrad reads, as a linear on each path of the default device (CTest runs it again
// on DEV=AMD through the gfx1100 emulator, poison on): the hand-written kernels where the device
// and shape qualify, the generic path where they do not (other shapes, more rows, formats without
// a kernel), each product against x times the reference dequantization, summed in double.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "base/env.h"
#include "llm/kernels/linear.h"
#include "llm/quant/lazy_dequant.h"
#include "runtime/device_features.h"
#include "test/llm/kernels/quant_matrix.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Shapes (out, in): one the hand-written kernels take for every format they read (rows of 512,
// whole 4-byte words for each; out a multiple of 16), and one they do not take for some (rows of
// 256: Q6_K's 210 and Q3_K's 110 bytes are not whole words; out 40 is not a multiple of 16; a
// 32-block format's row of 96 is no whole super-block).
std::vector<std::pair<int64_t, int64_t>> shapes(const QuantFormat& f) {
  return {{48, 512}, {40, f.block_size == 256 ? 256 : 96}};
}

}  // namespace

TEST_CASE("linear: every type on every path of the device against the reference dequantizer") {
  const std::string device = knob_str(Knob::DEV);
  std::map<Linear::Kernel, int> paths;
  for (const QuantFormat& f : all_formats()) {
    if (!can_dequantize_lazy(f.type)) continue;
    for (const auto& [out, in] : shapes(f)) {
      CAPTURE(f.name);
      CAPTURE(out);
      CAPTURE(in);
      test::QuantMatrix m = test::random_quant_matrix(f.type, out, in, 11);
      GgufTensor t;
      t.name = "w";
      t.dims = {static_cast<uint64_t>(in), static_cast<uint64_t>(out)};
      t.type = f.type;
      t.nbytes = m.bytes.size();
      t.data = m.bytes;
      const Linear l = load_linear(t, device);
      ++paths[l.kernel];
      // 1 row: the decode kernels; 32: a prefill chunk (WMMA, the CPU's packed GEMM); 33: the
      // generic path on every device.
      for (int64_t rows : {1, 32, 33}) {
        CAPTURE(rows);
        std::vector<float> xs(static_cast<size_t>(rows * in));
        for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.37f * float(i)) + 0.1f;
        const std::vector<double> x(xs.begin(), xs.end());
        const std::vector<float> got =
            l(Tensor::from_vector(xs, {rows, in}, dtypes::float32, device)).to_vector<float>();
        // Int8-rounded inputs (the int8 kernels, and every path of the int8-activation formats)
        // are within 1/254 of each value; a wrong read is NaN (poison) or off by order 1.
        test::check_product(got, x, m, rows, out, in, 1e-2, 1e-6);
      }
    }
  }
  const DeviceFeatures feat = device_features(device);
  CHECK(paths[Linear::Kernel::Generic] > 0);
  if (feat.is_gpu && feat.int8_dot && knob_int(Knob::LLM_KERNELS) != 0)
    CHECK(paths[Linear::Kernel::GpuInt8] > 0);
}
