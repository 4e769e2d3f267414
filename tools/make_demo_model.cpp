// make_demo_model: writes a small Qwen3-architecture GGUF with seeded random weights (meaningless
// output; labelled so in its metadata). With --vocab it carries the real Qwen3 vocabulary from
// scripts/tokenizer_reference.sh's qwen3_vocab.txt, so `llm` can tokenize and chat with it.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "llm/model/config.h"
#include "llm/model/demo_model.h"
#include "uop/error.h"

namespace {

using ugrad::fail;
using namespace ugrad::llm;

constexpr std::string_view kUsage = R"(usage: make_demo_model -o OUT.gguf [options]

Writes a Qwen3-architecture GGUF with seeded random weights. Its output is meaningless.

  -o, --output PATH       file to write (required)
  --type NAME             matrix type: F32, F16, Q8_0, Q4_K, IQ4_XS, ... (default F32);
                          norms stay F32
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

Quantized types need dim, heads*head-dim and ffn to be multiples of the type's block size
(32 for Q8_0, 256 for Q4_K and IQ4_XS).
)";

uint64_t parse_uint(std::string_view flag, std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    fail("{}: '{}' is not a non-negative integer", flag, text);
  }
  return v;
}

uint32_t parse_u32(std::string_view flag, std::string_view text) {
  const uint64_t v = parse_uint(flag, text);
  if (v > UINT32_MAX) fail("{}: {} is too large", flag, v);
  return static_cast<uint32_t>(v);
}

GgmlType parse_type(std::string_view text) {
  for (const QuantFormat& f : all_formats()) {
    if (f.name == text) return f.type;
  }
  fail("--type: unknown ggml type '{}'", text);
}

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
    } else if (flag == "--type") {
      o.weight_type = parse_type(value);
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
      try {
        o.rope_theta = std::stof(std::string(value));
      } catch (const std::exception&) {
        fail("--rope-theta: '{}' is not a number", value);
      }
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
      "wrote {}: qwen3, {} layers, dim {}, {}/{} heads of {}, ffn {}, vocab {}, {} weights, "
      "seed {}\n",
      output, c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size,
      format_of(o.weight_type).name, o.seed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_demo_model: %s\n", e.what());
    return 1;
  }
}
