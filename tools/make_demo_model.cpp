// make_demo_model: writes a small Qwen-family GGUF (qwen3, qwen3moe, qwen35 hybrid, qwen35moe) with
// seeded random weights (meaningless output; labelled so in its metadata). With --vocab it carries
// the real Qwen3 vocabulary from scripts/tokenizer_reference.sh's qwen3_vocab.txt, so `llm` can
// tokenize and chat with it.
#include <fmt/format.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "base/error.h"
#include "llm/config/config.h"
#include "llm/config/demo_model.h"
#include "tools/args.h"

namespace {

using ugrad::fail;
using ugrad::tools::parse_u32;
using ugrad::tools::parse_uint;
using namespace ugrad::llm;

constexpr std::string_view kUsage = R"(usage: make_demo_model -o OUT.gguf [options]

Writes a Qwen-family GGUF with seeded random weights. Its output is meaningless.

  -o, --output PATH       file to write (required)
  --arch NAME             qwen3 (default), qwen3moe, qwen35 (Gated DeltaNet hybrid), qwen35moe
  --type NAME             matrix type: F32, F16, Q8_0, Q2_K, Q4_K, IQ4_XS, ... (default F32);
                          norms stay F32
  --preset NAME           each matrix the type llama-quantize's preset gives it: Q2_K, Q3_K_S,
                          Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K, IQ4_XS, IQ4_NL,
                          Q4_0, Q5_0, Q8_0 (docs/quants.md#presets; instead of --type)
  --layers N              transformer blocks (default 2)
  --dim N                 embedding width (default 64)
  --heads N               query heads (default 4)
  --kv-heads N            key/value heads (default 2)
  --head-dim N            head size (default 16)
  --ffn N                 feed-forward width (default 128)
  --context N             context_length metadata (default 4096)
  --vocab-size N          token_embd rows; extra rows become [PADn] tokens (default: vocabulary)
  --rope-theta X          RoPE base (default 1e6)
  --seed N                weight seed (default 0)
  --untied                write output.weight (default: tied to token_embd)
  --vocab PATH            vocabulary text file from scripts/tokenizer_reference.sh
                          (BUILD/tokenizer_ref/qwen3_vocab.txt); default: a tiny synthetic one
  --chat-template PATH    file whose text becomes tokenizer.chat_template
  -h, --help              this text

qwen35 / qwen35moe:
  --rot N                 rotated dims per head (default head-dim / 4)
  --interval N            full_attention_interval: layer i is full attention iff (i+1) % N == 0
                          (default 4)
  --conv-kernel N         causal conv taps (default 4)
  --ssm-key-heads N       H_k (default 2)
  --ssm-value-heads N     H_v, a multiple of H_k (default 4)
  --ssm-key-dim N         d_k (default 16)
  --ssm-value-dim N       d_v (default 16)
  --nextn N               MTP tail blocks, written and skipped by readers (default 0)
qwen3moe / qwen35moe:
  --experts N             experts (default 8)
  --experts-used N        experts per token (default 2)
  --expert-ffn N          expert width (default 32)
  --shared-ffn N          shared expert width, qwen35moe only (default 32)

Quantized types need dim, heads*head-dim and ffn to be multiples of the type's block size
(32 for Q8_0, 256 for the K formats and IQ4_XS).
)";

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("--chat-template: cannot open {}", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int run(int argc, char** argv) {
  DemoModelOptions o;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (flag == "--untied") {
      o.tied_output = false;
      continue;
    }
    if (i + 1 >= argc) fail("{}: missing value (see --help)", flag);
    const std::string_view value = argv[++i];
    if (flag == "-o" || flag == "--output") {
      output = value;
    } else if (flag == "--arch") {
      const std::optional<ModelArch> arch = parse_arch(value);
      if (!arch) fail("--arch: unknown architecture '{}'", value);
      o.arch = *arch;
    } else if (flag == "--rot") {
      o.n_rot = parse_u32(flag, value);
    } else if (flag == "--interval") {
      o.full_attention_interval = parse_u32(flag, value);
    } else if (flag == "--conv-kernel") {
      o.conv_kernel = parse_u32(flag, value);
    } else if (flag == "--ssm-key-heads") {
      o.ssm_key_heads = parse_u32(flag, value);
    } else if (flag == "--ssm-value-heads") {
      o.ssm_value_heads = parse_u32(flag, value);
    } else if (flag == "--ssm-key-dim") {
      o.ssm_key_head_dim = parse_u32(flag, value);
    } else if (flag == "--ssm-value-dim") {
      o.ssm_value_head_dim = parse_u32(flag, value);
    } else if (flag == "--nextn") {
      o.nextn_layers = parse_u32(flag, value);
    } else if (flag == "--experts") {
      o.n_experts = parse_u32(flag, value);
    } else if (flag == "--experts-used") {
      o.n_experts_used = parse_u32(flag, value);
    } else if (flag == "--expert-ffn") {
      o.expert_ffn_dim = parse_u32(flag, value);
    } else if (flag == "--shared-ffn") {
      o.shared_ffn_dim = parse_u32(flag, value);
    } else if (flag == "--preset") {
      o.preset = value;
    } else if (flag == "--type") {
      o.weight_type = ugrad::tools::parse_ggml_type(flag, value);
    } else if (flag == "--layers") {
      o.n_layers = parse_u32(flag, value);
    } else if (flag == "--dim") {
      o.dim = parse_u32(flag, value);
    } else if (flag == "--heads") {
      o.n_heads = parse_u32(flag, value);
    } else if (flag == "--kv-heads") {
      o.n_kv_heads = parse_u32(flag, value);
    } else if (flag == "--head-dim") {
      o.head_dim = parse_u32(flag, value);
    } else if (flag == "--ffn") {
      o.ffn_dim = parse_u32(flag, value);
    } else if (flag == "--context") {
      o.context_length = parse_u32(flag, value);
    } else if (flag == "--vocab-size") {
      o.vocab_size = parse_u32(flag, value);
    } else if (flag == "--rope-theta") {
      o.rope_theta = static_cast<float>(ugrad::tools::parse_double(flag, value));
    } else if (flag == "--seed") {
      o.seed = parse_uint(flag, value);
    } else if (flag == "--vocab") {
      o.vocab = read_vocab_text(std::string(value));
    } else if (flag == "--chat-template") {
      o.chat_template = read_text_file(std::string(value));
    } else {
      fail("unknown option '{}' (see --help)", flag);
    }
  }
  if (output.empty()) fail("no output file: pass -o OUT.gguf (see --help)");
  write_demo_model(output, o);
  // Read the file back through the model loader's validation before calling it done.
  const GgufFile file = GgufFile::open(output);
  const ModelConfig c = ModelConfig::from_gguf(file);
  ModelWeights::from_gguf(file, c);
  fmt::print(
      "wrote {}: {}, {} layers, dim {}, {}/{} heads of {}, ffn {}, vocab {}, {} weights, "
      "seed {}\n",
      output, arch_name(c.arch), c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim,
      c.vocab_size,
      o.preset.empty() ? std::string(format_of(o.weight_type).name) : o.preset + " preset", o.seed);
  if (c.hybrid) {
    uint32_t n_recurrent = 0;
    for (uint32_t i = 0; i < c.n_layers; ++i) n_recurrent += c.is_recurrent(i) ? 1 : 0;
    fmt::print(
        "  hybrid: {} Gated DeltaNet + {} full-attention layers (+{} MTP skipped), rot {}, conv "
        "{}, "
        "H_k {} x d_k {}, H_v {} x d_v {}\n",
        n_recurrent, c.n_layers - n_recurrent, c.hybrid->n_nextn_layers, c.n_rot,
        c.hybrid->conv_kernel, c.hybrid->n_key_heads, c.hybrid->key_head_dim,
        c.hybrid->n_value_heads, c.hybrid->value_head_dim());
  }
  if (c.moe) {
    fmt::print("  moe: {} experts, {} used, expert ffn {}, shared ffn {}\n", c.moe->n_experts,
               c.moe->n_experts_used, c.moe->expert_ffn_dim, c.moe->shared_ffn_dim);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ugrad::tools::run_tool("make_demo_model", run, argc, argv);
}
