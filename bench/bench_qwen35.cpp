// Qwen3.5 hybrid on the generic path: a Qwen3.5-0.8B-shaped model (24 layers, every 4th gated full
// attention with 8 heads of 256 over 2 KV heads and n_rot 64; Gated DeltaNet with 16 key and 16
// value heads of 128; dim 1024, ffn 3584, vocab 151936, random weights) in Q8_0 or Q4_K. Prefill
// and decode tok/s, and decode against the memory-bandwidth roofline (weight and state bytes per
// token / read bandwidth measured in this run, with as many threads as the model runs on).
//   bench_qwen35 [Q8_0|Q4_K] [layers] [prompt tokens] [decode tokens]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "llm/model/demo_model.h"
#include "llm/models/generate.h"
#include "llm/quant/formats.h"

using namespace ugrad;
using namespace ugrad::llm;
using bench::clock_type;
using bench::seconds;

constexpr int kThreads = 2;  // the bench machine's cores; THREADS defaults to one per core

int main(int argc, char** argv) {
  std::string type_name = argc > 1 ? argv[1] : "Q8_0";
  uint32_t layers = argc > 2 ? std::stoi(argv[2]) : 24;
  int64_t prompt_len = argc > 3 ? std::stoi(argv[3]) : 128;
  int64_t decode_len = argc > 4 ? std::stoi(argv[4]) : 32;
  GgmlType type = type_name == "Q4_K" ? GgmlType::Q4_K : GgmlType::Q8_0;

  DemoModelOptions o;
  o.arch = ModelArch::kQwen35;
  o.n_layers = layers;
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
  o.weight_type = type;
  std::string path =
      (std::filesystem::temp_directory_path() / ("ugrad_bench_qwen35_" + type_name + ".gguf"))
          .string();
  auto t0 = clock_type::now();
  write_demo_model(path, o);
  std::printf("wrote %s in %.1f s\n", path.c_str(), seconds(t0));

  GgufFile file = GgufFile::open(path);
  // Read once per decoded token: every weight (the embedding table is tied: read as output), and
  // each Gated DeltaNet layer's recurrent state, read and written.
  double weight_bytes = 0;
  for (const GgufTensor& t : file.tensors()) weight_bytes += static_cast<double>(t.nbytes);
  uint32_t gdn_layers = 0;
  for (uint32_t i = 0; i < layers; ++i) gdn_layers += (i + 1) % o.full_attention_interval != 0;
  const double state_bytes = 2.0 * gdn_layers * o.ssm_value_heads * o.ssm_value_head_dim *
                             o.ssm_key_head_dim * sizeof(float);
  t0 = clock_type::now();
  std::unique_ptr<LanguageModel> model = load_model(file, prompt_len + decode_len + 1, "CPU");
  Generator gen(*model);
  std::vector<int32_t> prompt(prompt_len);
  for (int64_t i = 0; i < prompt_len; ++i) prompt[i] = static_cast<int32_t>((i * 7919) % 150000);

  // Warm-up: captures the prefill and decode JITs (compiles are not timed).
  double warm_s = gen.warm_up();
  std::printf("load %.1f s, warm-up (compiles) %.1f s\n", seconds(t0) - warm_s, warm_s);
  GenerateOptions g;
  g.max_tokens = decode_len;
  GenerateResult r = gen.generate(prompt, g);
  double prefill_tps = static_cast<double>(prompt_len) / r.prefill_seconds;
  double decode_tps = static_cast<double>(r.tokens.size() - 1) / r.decode_seconds;

  double bw = bench::read_bandwidth(kThreads);
  double roofline_tps = bw * 1e9 / (weight_bytes + state_bytes);
  std::printf("model: %u layers (%u Gated DeltaNet), %s, %.1f MB of weights, %.1f MB of state\n",
              layers, gdn_layers, type_name.c_str(), weight_bytes * 1e-6, state_bytes * 0.5e-6);
  std::printf("prefill %lld tokens: %.2f tok/s (%.1f ms per 32-token chunk)\n",
              static_cast<long long>(prompt_len), prefill_tps, 32e3 / prefill_tps);
  std::printf(
      "decode %zu tokens: %.2f tok/s; roofline %.2f tok/s at %.1f GB/s read (%d threads) -> "
      "%.1f%% of roofline\n",
      r.tokens.size(), decode_tps, roofline_tps, bw, kThreads, 100 * decode_tps / roofline_tps);
  std::filesystem::remove(path);
  return 0;
}
