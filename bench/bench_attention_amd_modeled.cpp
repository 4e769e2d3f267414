// Modeled AMD speed of the layers' token mixing, run as gfx1100 code on the emulator
// (test/mockgpu) and timed by its cost model of an RX 7900 XTX: MODELED, not measured.
// - Decode attention (llm/kernels/attention.h: the flash-attention kernels of flash_attention.h,
//   and the generic path with LLM_KERNELS=0) at the Qwen3-8B shape, 32 query heads over 8 KV
//   heads of 128, one query against a half-precision cache holding `positions` positions. The
//   figure of merit is the key and value bytes read (2 x 8 heads x positions x 128 x 2 B) over the
//   modeled time of every launch, launch overheads included, against 960 GB/s.
// - Prefill attention of a 32-row chunk at the Qwen3.6-27B shape (24 query heads over 4 KV heads
//   of 256) after a 401-token prompt's first 384 positions: kernels against the generic path.
// - The gated delta rule of a Qwen3.6-27B Gated DeltaNet layer (48 value heads, d_k = d_v = 128)
//   for a 32-row prefill chunk and a decode row: the fused scan (llm/kernels/delta_scan.h)
//   against the generic path.
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

struct Shape {
  int64_t heads, kv_heads, head_dim;
};
constexpr Shape k8b{32, 8, 128}, k27b{24, 4, 256};

// The modeled launches since the last clear, one line each; their sum.
mockgpu::ModeledSum report(const std::string& lib) {
  mockgpu::ModeledSum sum;
  for (const mockgpu::LaunchRecord& rec : mockgpu::launch_records(lib)) {
    const mockgpu::ModeledTime t = mockgpu::model_launch(rec.counters);
    std::printf("    %s\n", mockgpu::describe_launch(rec.kernel, rec.counters, t).c_str());
    sum.add(t, rec.counters);
  }
  return sum;
}

// "12.3 (11.0-13.9) us MODELED".
std::string total(const mockgpu::ModeledSum& t) {
  return mockgpu::format_range(t.seconds * 1e6, t.fast_s * 1e6, t.slow_s * 1e6) + " us MODELED";
}

// Runs the attention of `rows` rows whose last sits at position `positions` - 1; prints each
// launch and the total.
void run(const Shape& sh, int64_t rows, int64_t positions, bool kernels, const std::string& lib) {
  ScopedKnob knob(Knob::LLM_KERNELS, kernels ? "1" : "0");
  const int64_t capacity = positions + 31;
  // As the model's KvCache holds them: realized buffers (values do not change the timing).
  Tensor in[] = {
      Tensor::full({sh.kv_heads, capacity, sh.head_dim}, 0.25, dtypes::float16, "AMD").contiguous(),
      Tensor::full({sh.kv_heads, capacity, sh.head_dim}, 0.5, dtypes::float16, "AMD").contiguous(),
      Tensor::full({rows, sh.heads, sh.head_dim}, 0.1, dtypes::float32, "AMD").contiguous()};
  Tensor::realize_all(in);
  Chunk chunk = make_chunk(rows, positions).bind(positions - rows, rows);
  // q as the model materializes it (with the cache writes), before the launches measured.
  Tensor q = attention_query(in[2], in[0], chunk).contiguous();
  q.realize();
  attention(q, in[0], in[1], chunk).realize();
  mockgpu::clear_launch_records(lib);
  attention(q, in[0], in[1], chunk).realize();
  const double kv_bytes = 2.0 * sh.kv_heads * double(positions) * sh.head_dim * 2;
  std::printf("  %s, %lld rows, %lld positions\n", kernels ? "flash kernels" : "generic path",
              static_cast<long long>(rows), static_cast<long long>(positions));
  const mockgpu::ModeledSum t = report(lib);
  std::printf("    total %s, %.1f%% of 960 GB/s (spec) on the key and value bytes (%.1f MB)\n",
              total(t).c_str(), 100.0 * kv_bytes / t.seconds / 960e9, kv_bytes / 1e6);
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
  // Past the first chunk: the state is read.
  const UOp start_pos = make_chunk(rows, 4096).bind(384, rows).start_pos;
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5], start_pos).realize();
  mockgpu::clear_launch_records(lib);
  gated_delta_rule(in[0], in[1], in[2], in[3], in[4], in[5], start_pos).realize();
  std::printf("  %s, %lld rows\n", kernels ? "fused scan" : "generic path",
              static_cast<long long>(rows));
  std::printf("    total %s\n", total(report(lib)).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = std::getenv("HIP_LIB") ? std::getenv("HIP_LIB") : UGRAD_MOCKHIP_LIB;
  setenv("HIP_LIB", lib.c_str(), 1);
  std::vector<int64_t> positions;
  for (int i = 1; i < argc; ++i) positions.push_back(std::atoll(argv[i]));
  if (positions.empty()) positions = {512, 4096};
  std::printf(
      "Modeled AMD (RX 7900 XTX, %s, NOT measured): decode attention, %lld heads over %lld KV "
      "heads of %lld\n",
      mockgpu::model_name().c_str(), static_cast<long long>(k8b.heads),
      static_cast<long long>(k8b.kv_heads), static_cast<long long>(k8b.head_dim));
  for (int64_t p : positions)
    for (bool kernels : {true, false}) run(k8b, 1, p, kernels, lib);
  std::printf("Prefill attention, 24 heads over 4 KV heads of 256\n");
  for (bool kernels : {true, false}) run(k27b, 32, 416, kernels, lib);
  std::printf("Gated delta rule, 48 value heads of d_k = d_v = 128\n");
  for (int64_t rows : {32, 1})
    for (bool kernels : {true, false}) run_scan(rows, kernels, lib);
}
