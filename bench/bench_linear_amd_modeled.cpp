// Modeled AMD speed of the hand-written quantized-linear kernels (llm/kernels/matvec_int8.h for
// one row, matmul_wmma.h for a 32-row chunk), one launch each per Qwen3-8B and Qwen3.6-27B
// matrix shape and format, run as gfx1100 code on the emulator (test/mockgpu) and timed by its
// cost model of an RX 7900 XTX: MODELED, not measured.
// Per launch, the counters behind the figure:
//   % of 960 GB/s   weight bytes / modeled time / 960 GB/s (launch overhead included)
//   DRAM use        weight bytes / DRAM bytes (128 B x distinct lines the launch touches: the
//                   weight, x, y): how much of what comes from memory is weight bytes used
//   fetch use       of the bytes each vector load or store fetches (the 128 B lines it
//                   touches), the share the kernel uses (any of its accesses reads or writes
//                   them); "by the load": the share that very instruction's lanes access (a
//                   line that the next instruction touches again counts as waste there)
//   % of WMMA peak  (prefill) 2 x 32 x out x in flops / modeled time / 122.9 TFLOP/s
//   inst/B          wave instructions per weight byte (all classes)
//   waves/SIMD      occupancy from VGPRs and LDS
//   bound           the cost model's largest term
// Weights are random bytes (timings do not depend on values); x is rows of 0.5.
//   bench_linear_amd_modeled [FORMAT ...]   (default: every format the kernels take)
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "llm/kernels/matmul_wmma.h"
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

// Qwen3-8B's layer as the model runs it (llm/kernels/linear.h's LinearGroup: q, k and v one
// matrix, gate and up one): qkv 6144x4096 (q 4096, k and v 1024 each), o 4096x4096, gate+up
// 24576x4096, down 4096x12288. Qwen3.6-27B's full-attention layer's FFN (the dominant shapes).
const LinearShape kShapes[] = {{"8b qkv", 6144, 4096, 1},       {"8b o", 4096, 4096, 1},
                               {"8b gate+up", 24576, 4096, 1},  {"8b down", 4096, 12288, 1},
                               {"27b gate+up", 34816, 5120, 1}, {"27b down", 5120, 17408, 1}};

// f16 WMMA peak of the card the cost model describes: 96 CUs x 2 SIMDs x 4096 MACs per 32
// cycles x 2 flops x 2.5 GHz (docs/rdna3.md).
constexpr double kWmmaPeak = 96 * 2 * 4096.0 / 32 * 2 * 2.5e9;

struct Result {
  mockgpu::ModeledSum decode, prefill;
  double weight_bytes = 0, flops = 0;
};

// The modeled launches since the last clear, one line each; their sum.
mockgpu::ModeledSum report_launches(const char* shape, GgmlType type, double bytes, double flops,
                                    const std::string& lib) {
  mockgpu::ModeledSum sum;
  for (const mockgpu::LaunchRecord& rec : mockgpu::launch_records(lib)) {
    // The kernel's own launch: x's quantization or cast runs before it.
    if (!std::string(rec.kernel).starts_with(flops > 0 ? "matmul_wmma" : "matvec_int8")) continue;
    const mockgpu::LaunchCounters& c = rec.counters;
    const mockgpu::ModeledTime t = mockgpu::model_launch(c);
    const double scale = c.scale(),
                 fetched = double(c.vmem_line_requests) * double(mockgpu::kLineBytes);
    std::printf("    %-12s %-6s %-11s %s us MODELED  %5.1f%% of 960 GB/s (spec)", shape,
                std::string(format_of(type).name).c_str(), flops > 0 ? "wmma 32" : "int8 1",
                mockgpu::format_range(t.seconds * 1e6, t.fast_s * 1e6, t.slow_s * 1e6).c_str(),
                100.0 * bytes / t.seconds / 960e9);
    if (flops > 0) std::printf("  %5.1f%% of the WMMA peak", 100.0 * flops / t.seconds / kWmmaPeak);
    std::printf(
        "  DRAM use %5.1f%%  fetch use %5.1f%% (%4.1f%% by the load)  %.3f inst/B  %2d waves/SIMD  "
        "%s-bound  (%.2f lines/VMEM, DOT4 %.0f, WMMA %.0f, VALU %.0f, VMEM %.0f)\n",
        100.0 * bytes / t.dram_bytes, 100.0 * double(c.vmem_used_line_bytes) / fetched,
        100.0 * double(c.vmem_request_bytes) / fetched, double(c.instructions()) * scale / bytes,
        t.waves_per_simd, t.bound,
        double(c.vmem_line_requests) / double(c.count(mockgpu::InstClass::VMEM)),
        double(c.count(mockgpu::InstClass::DOT4)) * scale,
        double(c.count(mockgpu::InstClass::WMMA)) * scale,
        double(c.count(mockgpu::InstClass::VALU)) * scale,
        double(c.count(mockgpu::InstClass::VMEM)) * scale);
    sum.add(t, c);
  }
  mockgpu::clear_launch_records(lib);
  return sum;
}

// "12.3 (11.0-13.9)" in microseconds.
std::string us(const mockgpu::ModeledSum& t) {
  return mockgpu::format_range(t.seconds * 1e6, t.fast_s * 1e6, t.slow_s * 1e6);
}

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
  Result r;
  r.weight_bytes = double(bytes);
  r.decode = report_launches(s.name, type, double(bytes), 0, lib);
  Tensor xh = Tensor::full({kWmmaRows, s.in}, 0.5, dtypes::float32, "AMD").contiguous().realize();
  setenv("MOCKGPU_SAMPLE", std::to_string(std::max(1, sample / 2)).c_str(), 1);
  mockgpu::clear_launch_records(lib);
  matmul_wmma(xh, w, type, s.out, s.in).realize();
  r.prefill =
      report_launches(s.name, type, double(bytes), 2.0 * kWmmaRows * double(s.out * s.in), lib);
  setenv("MOCKGPU_SAMPLE", "1", 1);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = std::getenv("HIP_LIB") ? std::getenv("HIP_LIB") : UGRAD_MOCKHIP_LIB;
  setenv("HIP_LIB", lib.c_str(), 1);
  std::vector<std::string> names(argv + 1, argv + argc);
  if (names.empty()) names = {"Q4_0", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS"};
  std::printf("Modeled AMD (RX 7900 XTX, %s, NOT measured): matvec_int8, 1 row\n",
              mockgpu::model_name().c_str());
  for (const std::string& name : names) {
    GgmlType type{};
    bool found = false;
    for (const QuantFormat& f : all_formats())
      if (f.name == name) type = f.type, found = true;
    if (!found || !matvec_int8_needs(type, 4096, 4096)) {
      std::printf("  %s: no int8 decode kernel\n", name.c_str());
      continue;
    }
    std::printf("  %s\n", name.c_str());
    Result layer8b, layer27b;
    for (const LinearShape& s : kShapes) {
      const Result r = run(type, s, lib);
      Result& sum = std::string(s.name).starts_with("8b") ? layer8b : layer27b;
      sum.decode += double(s.count) * r.decode;
      sum.prefill += double(s.count) * r.prefill;
      sum.weight_bytes += s.count * r.weight_bytes;
      sum.flops += s.count * 2.0 * kWmmaRows * double(s.out * s.in);
    }
    for (const auto& [label, r] : {std::pair{"Qwen3-8B layer", layer8b}, {"27B FFN", layer27b}})
      std::printf(
          "    %s: decode %s us MODELED (%s), %.1f%% of 960 GB/s on weight bytes; prefill (32 "
          "rows) %s us MODELED, %.1f%% of the WMMA peak (spec)\n",
          label, us(r.decode).c_str(), mockgpu::model_name().c_str(),
          100.0 * r.weight_bytes / r.decode.seconds / 960e9, us(r.prefill).c_str(),
          100.0 * r.flops / r.prefill.seconds / kWmmaPeak);
  }
  return 0;
}
