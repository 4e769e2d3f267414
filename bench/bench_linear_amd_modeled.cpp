// Modeled AMD speed of the hand-written quantized-linear kernels (llm/kernels/matvec_int8.h), one
// launch per Qwen3-8B and Qwen3.6-27B matrix shape and format, run as gfx1100 code on the emulator
// (test/mockgpu) and timed by its cost model of an RX 7900 XTX: MODELED, not measured.
// Per launch, the counters behind the figure:
//   % of 960 GB/s   weight bytes / modeled time / 960 GB/s (launch overhead included)
//   fetch use       weight bytes / (128 B x line requests of the weight loads): how much of each
//                   vector load's lines the kernel uses (x's loads, cache hits, apart)
//   inst/B          wave instructions per weight byte (all classes)
//   waves/SIMD      occupancy from VGPRs and LDS
//   bound           the cost model's largest term
// Weights are random bytes (timings do not depend on values); x is one row of 0.5.
//   bench_linear_amd_modeled [FORMAT ...]   (default: Q4_0 Q8_0 Q4_K Q5_K Q6_K IQ4_XS)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "llm/kernels/matvec_int8.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch_records.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

struct LinearShape {
  const char* name;
  int64_t out, in;
  int count;  // per layer
};

// Qwen3-8B's layer: q and o 4096x4096, k and v 1024x4096, gate and up 12288x4096, down
// 4096x12288. Qwen3.6-27B's full-attention layer (the dominant FFN shapes).
const LinearShape kShapes[] = {{"8b q/o", 4096, 4096, 2},    {"8b k/v", 1024, 4096, 2},
                         {"8b gate/up", 12288, 4096, 2}, {"8b down", 4096, 12288, 1},
                         {"27b gate/up", 17408, 5120, 2}, {"27b down", 5120, 17408, 1}};

struct Result {
  double seconds = 0, weight_bytes = 0;
};

Result run(GgmlType type, const LinearShape& s, const std::string& lib) {
  const int64_t bytes = static_cast<int64_t>(row_bytes(type, s.in)) * s.out;
  std::vector<uint32_t> words((bytes + 3) / 4);
  std::mt19937 rng(1);
  for (uint32_t& w : words) w = rng() & 0x3BFF3BFFu;  // finite fp16 halves wherever they land
  Tensor w = Tensor::from_vector(words, {static_cast<int64_t>(words.size())}, dtypes::uint32, "AMD")
                 .realize();
  Tensor x = Tensor::full({1, s.in}, 0.5, dtypes::float32, "AMD").contiguous().realize();
  Int8Rows q = quantize_rows_int8(x);
  q.words.realize();
  q.scale = q.scale.contiguous().realize();
  mockgpu::clear_launch_records(lib);
  const int sample = static_cast<int>(std::max<int64_t>(1, s.out / 4 / 256));
  setenv("MOCKGPU_SAMPLE", std::to_string(sample).c_str(), 1);
  matvec_int8(q, w, type, s.out, s.in).realize();
  setenv("MOCKGPU_SAMPLE", "1", 1);
  Result r;
  for (const mockgpu::LaunchRecord& rec : mockgpu::launch_records(lib)) {
    const mockgpu::LaunchCounters& c = rec.counters;
    const mockgpu::ModeledTime t = mockgpu::model_launch(c);
    const double scale = c.scale();
    const double lines = double(c.vmem_line_requests) * scale;
    std::printf(
        "    %-12s %-6s %8.1f us MODELED  %5.1f%% of 960 GB/s  fetch use %5.1f%%  %.3f inst/B  "
        "%2d waves/SIMD  %s-bound  (%.2f lines/VMEM, DOT4 %.0f, VALU %.0f, VMEM %.0f)\n",
        s.name, std::string(format_of(type).name).c_str(), t.seconds * 1e6,
        100.0 * double(bytes) / t.seconds / 960e9,
        100.0 * double(bytes) / (lines * double(mockgpu::kLineBytes)),
        double(c.instructions()) * scale / double(bytes), t.waves_per_simd, t.bound,
        double(c.vmem_line_requests) / double(c.count(mockgpu::InstClass::VMEM)),
        double(c.count(mockgpu::InstClass::DOT4)) * scale,
        double(c.count(mockgpu::InstClass::VALU)) * scale,
        double(c.count(mockgpu::InstClass::VMEM)) * scale);
    r.seconds += t.seconds;
  }
  r.weight_bytes = double(bytes);
  mockgpu::clear_launch_records(lib);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = std::getenv("HIP_LIB") ? std::getenv("HIP_LIB") : UGRAD_MOCKHIP_LIB;
  setenv("HIP_LIB", lib.c_str(), 1);
  std::vector<std::string> names(argv + 1, argv + argc);
  if (names.empty()) names = {"Q4_0", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"};
  std::printf("Modeled AMD (RX 7900 XTX cost model v%d, NOT measured): matvec_int8, 1 row\n",
              mockgpu::CardModel{}.version);
  for (const std::string& name : names) {
    GgmlType type{};
    bool found = false;
    for (const QuantFormat& f : all_formats())
      if (f.name == name) type = f.type, found = true;
    if (!found || !matvec_int8_supports(type, 4096, 4096)) {
      std::printf("  %s: no int8 decode kernel\n", name.c_str());
      continue;
    }
    std::printf("  %s\n", name.c_str());
    Result layer8b, layer27b;
    for (const LinearShape& s : kShapes) {
      const Result r = run(type, s, lib);
      Result& sum = std::string(s.name).starts_with("8b") ? layer8b : layer27b;
      sum.seconds += s.count * r.seconds;
      sum.weight_bytes += s.count * r.weight_bytes;
    }
    for (const auto& [label, r] : {std::pair{"Qwen3-8B layer", layer8b}, {"27B FFN", layer27b}})
      std::printf("    %s: %.1f us MODELED, %.1f%% of 960 GB/s on weight bytes\n", label,
                  r.seconds * 1e6, 100.0 * r.weight_bytes / r.seconds / 960e9);
  }
  return 0;
}
