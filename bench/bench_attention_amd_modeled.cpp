// Modeled AMD speed of the layers' token mixing: decode attention (llm/kernels/attention.h: the
// flash-decode kernels of attention_decode.h, and the generic path with LLM_KERNELS=0) at the
// Qwen3-8B shape, 32 query heads over 8 KV heads of 128, one query against a half-precision cache
// holding `positions` positions; run as gfx1100 code on the emulator (test/mockgpu) and timed by
// its cost model of an RX 7900 XTX: MODELED, not measured. The figure of merit is the key and value
// bytes read (2 x 8 heads x positions x 128 x 2 B) over the modeled time of every launch, launch
// overheads included, against 960 GB/s. Then the gated delta rule of a Qwen3.6-27B Gated DeltaNet
// layer (48 value heads, d_k = d_v = 128) for a 32-row prefill chunk and a decode row: the fused
// scan (llm/kernels/delta_scan.h) against the generic path.
//   bench_attention_amd_modeled [POSITIONS ...]   (default: 512 4096)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/env.h"
#include "llm/kernels/attention.h"
#include "llm/kernels/delta_rule.h"
#include "schedule/schedule.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch_records.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int64_t kHeads = 32, kKvHeads = 8, kHeadDim = 128;

// The modeled launches since the last clear, one line each; their total time.
double report(const std::string& lib) {
  double seconds = 0;
  for (const mockgpu::LaunchRecord& rec : mockgpu::launch_records(lib)) {
    const mockgpu::ModeledTime t = mockgpu::model_launch(rec.counters);
    std::printf("    %s\n", mockgpu::describe_launch(rec.kernel, rec.counters, t).c_str());
    seconds += t.seconds;
  }
  return seconds;
}

// Runs one decode attention at `positions` filled positions; prints each launch and the total.
void run(int64_t positions, bool kernels, const std::string& lib) {
  ScopedKnob knob(Knob::LLM_KERNELS, kernels ? "1" : "0");
  const int64_t capacity = positions + 31;
  // As the model's KvCache holds them: realized buffers (values do not change the timing).
  Tensor k =
      Tensor::full({kKvHeads, capacity, kHeadDim}, 0.25, dtypes::float16, "AMD").contiguous();
  Tensor v = Tensor::full({kKvHeads, capacity, kHeadDim}, 0.5, dtypes::float16, "AMD").contiguous();
  Tensor q = Tensor::full({1, kHeads, kHeadDim}, 0.1, dtypes::float32, "AMD").contiguous();
  Tensor inputs[] = {k, v, q};
  Tensor::realize_all(inputs);
  Chunk chunk = make_chunk(1, positions).bind(positions - 1, 1);
  // The inputs' own kernels run with the first call.
  attention(inputs[2], inputs[0], inputs[1], chunk).realize();
  mockgpu::clear_launch_records(lib);
  attention(inputs[2], inputs[0], inputs[1], chunk).realize();
  const double kv_bytes = 2.0 * kKvHeads * double(positions) * kHeadDim * 2;
  std::printf("  %s, %lld positions\n", kernels ? "flash-decode kernels" : "generic path",
              static_cast<long long>(positions));
  const double seconds = report(lib);
  std::printf(
      "    total %.1f us MODELED, %.1f%% of 960 GB/s on the key and value bytes (%.1f MB)\n",
      seconds * 1e6, 100.0 * kv_bytes / seconds / 960e9, kv_bytes / 1e6);
}

void run_scan(int64_t rows, bool kernels, const std::string& lib) {
  constexpr int64_t kValueHeads = 48, kDk = 128, kDv = 128;
  ScopedKnob knob(Knob::LLM_KERNELS, kernels ? "1" : "0");
  Tensor in[] = {Tensor::zeros({kValueHeads, kDv, kDk}, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({rows, kValueHeads, kDk}, 0.05, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({rows, kValueHeads, kDk}, 0.05, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({rows, kValueHeads, kDv}, 0.5, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({rows, kValueHeads}, 0.5, dtypes::float32, "AMD").contiguous(),
                 Tensor::full({rows, kValueHeads}, -0.1, dtypes::float32, "AMD").contiguous()};
  Tensor::realize_all(in);
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5]).realize();
  mockgpu::clear_launch_records(lib);
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5]).realize();
  std::printf("  %s, %lld rows\n", kernels ? "fused scan" : "generic path",
              static_cast<long long>(rows));
  std::printf("    total %.1f us MODELED\n", report(lib) * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = std::getenv("HIP_LIB") ? std::getenv("HIP_LIB") : UGRAD_MOCKHIP_LIB;
  setenv("HIP_LIB", lib.c_str(), 1);
  std::vector<int64_t> positions;
  for (int i = 1; i < argc; ++i) positions.push_back(std::atoll(argv[i]));
  if (positions.empty()) positions = {512, 4096};
  std::printf(
      "Modeled AMD (RX 7900 XTX cost model v%d, NOT measured): decode attention, %lld "
      "heads over %lld KV heads of %lld\n",
      mockgpu::CardModel{}.version, static_cast<long long>(kHeads),
      static_cast<long long>(kKvHeads), static_cast<long long>(kHeadDim));
  for (int64_t p : positions)
    for (bool kernels : {true, false}) run(p, kernels, lib);
  std::printf("Gated delta rule, 48 value heads of d_k = d_v = 128\n");
  for (int64_t rows : {32, 1})
    for (bool kernels : {true, false}) run_scan(rows, kernels, lib);
}
