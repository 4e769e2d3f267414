// Qwen3.5 hybrid on the generic path: a Qwen3.5-0.8B-shaped model (24 layers, every 4th gated full
// attention with 8 heads of 256 over 2 KV heads and n_rot 64; Gated DeltaNet with 16 key and 16
// value heads of 128; dim 1024, ffn 3584, vocab 151936, random weights) in Q8_0 or Q4_K. Prefill
// and decode tok/s, and decode against the memory-bandwidth roofline (weight and state bytes per
// token / read bandwidth measured in this run, with as many threads as the model runs on).
//   bench_qwen35 [Q8_0|Q4_K] [layers] [prompt tokens] [decode tokens]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/llm_bench.h"
#include "llm/config/demo_model.h"
#include "llm/models/generate.h"

using namespace ugrad;
using namespace ugrad::llm;

constexpr int kThreads = 2;  // the bench machine's cores; THREADS defaults to one per core

int main(int argc, char** argv) {
  const bench::LlmBenchArgs a = bench::parse_llm_bench_args(argc, argv, 24, 128);
  DemoModelOptions o;
  o.arch = ModelArch::kQwen35;
  o.n_layers = a.layers;
  o.full_attention_interval = 4;
  o.dim = 1024;
  o.n_heads = 8;
  o.n_kv_heads = 2;
  o.head_dim = 256;
  o.n_rot = 64;
  o.rope_theta = 1e7f;
  o.ffn_dim = 3584;
  o.ssm_key_heads = 16;
  o.ssm_value_heads = 16;
  o.ssm_key_head_dim = 128;
  o.ssm_value_head_dim = 128;
  o.vocab_size = 151936;
  o.weight_type = a.type;
  const bench::DemoRun demo = bench::run_demo("ugrad_bench_qwen35", o, a);
  const GgufFile& file = demo.file;
  const bench::GenerateRun& run = demo.run;
  // Read once per decoded token: every weight, and each Gated DeltaNet layer's recurrent state,
  // read and written.
  const double weight_bytes = bench::weight_bytes(file);
  uint32_t gdn_layers = 0;
  for (uint32_t i = 0; i < a.layers; ++i) gdn_layers += (i + 1) % o.full_attention_interval != 0;
  const double state_bytes = 2.0 * gdn_layers * o.ssm_value_heads * o.ssm_value_head_dim *
                             o.ssm_key_head_dim * sizeof(float);

  const double bw = bench::read_bandwidth(kThreads);
  const double roofline_tps = bw * 1e9 / (weight_bytes + state_bytes);
  std::printf(
      "model: %u layers (%u Gated DeltaNet), %s, %.1f MB of weights, %.1f MB of state; warm-up "
      "(compiles) %.1f s\n",
      a.layers, gdn_layers, a.type_name.c_str(), weight_bytes * 1e-6, state_bytes * 0.5e-6,
      run.warmup_seconds);
  std::printf("prefill %lld tokens: %.2f tok/s (%s; %.1f ms per 32-token chunk)\n",
              static_cast<long long>(a.prompt_len), run.prefill_tps,
              bench::rounds_text(run.prefill_rounds).c_str(), 32e3 / run.prefill_tps);
  std::printf(
      "decode %zu tokens: %.2f tok/s (%s); roofline %.2f tok/s at %.1f GB/s read (%d threads) -> "
      "%.1f%% of roofline\n",
      run.decoded, run.decode_tps, bench::rounds_text(run.decode_rounds).c_str(), roofline_tps, bw,
      kThreads, 100 * run.decode_tps / roofline_tps);
  return 0;
}
