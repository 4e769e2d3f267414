#include "llm/config/demo_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numbers>
#include <span>
#include <utility>

#include "base/error.h"
#include "llm/config/config.h"
#include "llm/quant/presets.h"
#include "llm/quant/quantize.h"
#include "llm/tokenizer/byte_unicode.h"

namespace ugrad::llm {

namespace {

constexpr uint32_t kByteTokens = 256;
constexpr uint32_t kGgmlQuantizationVersion = 2;  // GGML_QNT_VERSION
constexpr double kNormJitter = 0.1;  // norm weights are 1 +- this, so a skipped norm shows up
constexpr uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
// ssm_a = -exp(A_log) with A_log ~ normal(0.5, 0.5): decays exp(g) spread over (0, 1).
constexpr double kALogMean = 0.5, kALogStd = 0.5;
// Qwen3.5's rotary dims and MRoPE sections (docs/qwen.md#qwen35-metadata,
// docs/qwen.md#real-model-sizes).
constexpr uint32_t kQwen35Rot = 64;
constexpr std::array<int32_t, 4> kQwen35Sections = {11, 11, 10, 0};

// llama_ftype written as general.file_type (informational; docs/gguf.md#ggml-type-ids). A file
// of one matrix type is labelled with the ftype of that type.
constexpr std::array<std::pair<GgmlType, uint32_t>, 12> kFileTypes = {{
    {GgmlType::F32, 0},
    {GgmlType::F16, 1},
    {GgmlType::Q4_0, 2},
    {GgmlType::Q8_0, 7},
    {GgmlType::Q2_K, 10},
    {GgmlType::Q3_K, 11},  // MOSTLY_Q3_K_S
    {GgmlType::Q4_K, 14},  // MOSTLY_Q4_K_S
    {GgmlType::Q5_K, 16},  // MOSTLY_Q5_K_S
    {GgmlType::Q6_K, 18},
    {GgmlType::IQ4_NL, 25},
    {GgmlType::IQ4_XS, 30},
    {GgmlType::BF16, 32},
}};

// tokenizer.ggml.token_type values (docs/qwen.md#tokenizer-keys).
constexpr int32_t kTypeNormal = 1, kTypeControl = 3, kTypeUserDefined = 4, kTypeUnused = 5;

// Seeded normal numbers: splitmix64 + Box-Muller, so the weights do not depend on the standard
// library's distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += kSplitMixGamma);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  double normal() {
    const double r = std::sqrt(-2.0 * std::log(uniform()));
    return r * std::cos(2.0 * std::numbers::pi * uniform());
  }

 private:
  uint64_t state_;
};

// Each tensor gets its own stream, seeded by the model seed and the tensor's name.
Rng tensor_rng(uint64_t seed, std::string_view name) {
  uint64_t h = kFnvOffset;
  for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * kFnvPrime;
  return Rng(h ^ (seed * kSplitMixGamma));
}

void check_positive(std::string_view option, uint64_t v) {
  if (v == 0) fail("demo model: option {} must be positive", option);
}

void check_blocks(std::string_view what, uint64_t n, GgmlType type) {
  const uint32_t block = format_of(type).block_size;
  if (n % block != 0) {
    fail("demo model: {} = {} is not a multiple of {}'s block size {}", what, n,
         format_of(type).name, block);
  }
}

void check_options(const DemoModelOptions& o, size_t n_tokens) {
  check_positive("n_layers", o.n_layers);
  check_positive("dim", o.dim);
  check_positive("n_heads", o.n_heads);
  check_positive("n_kv_heads", o.n_kv_heads);
  check_positive("head_dim", o.head_dim);
  check_positive("ffn_dim", o.ffn_dim);
  check_positive("context_length", o.context_length);
  if (o.n_heads % o.n_kv_heads != 0) {
    fail("demo model: n_heads = {} is not a multiple of n_kv_heads = {}", o.n_heads, o.n_kv_heads);
  }
  if (o.head_dim % 2 != 0) fail("demo model: head_dim = {} must be even", o.head_dim);
  if (o.vocab_size != 0 && o.vocab_size < n_tokens) {
    fail("demo model: vocab_size = {} is smaller than the vocabulary's {} tokens", o.vocab_size,
         n_tokens);
  }
  if (!can_quantize(o.weight_type)) {
    fail("demo model: weight type {} cannot be written", format_of(o.weight_type).name);
  }
  if (!o.preset.empty()) preset_named(o.preset);  // an Error names an unknown preset
  // Quant blocks run along ne0, the input width of each matrix (a preset picks types that fit,
  // or names the tensor they do not).
  const auto blocks = [&](std::string_view what, uint64_t n) {
    if (o.preset.empty()) check_blocks(what, n, o.weight_type);
  };
  blocks("dim (input of attn_q/k/v, ffn_gate/up, rows of token_embd)", o.dim);
  blocks("n_heads*head_dim (input of attn_output)", uint64_t{o.n_heads} * o.head_dim);
  const bool moe = o.arch == ModelArch::kQwen3Moe || o.arch == ModelArch::kQwen35Moe;
  if (!moe) blocks("ffn_dim (input of ffn_down)", o.ffn_dim);
  if (moe) {
    check_positive("n_experts", o.n_experts);
    check_positive("n_experts_used", o.n_experts_used);
    check_positive("expert_ffn_dim", o.expert_ffn_dim);
    if (o.n_experts_used > o.n_experts) {
      fail("demo model: n_experts_used = {} exceeds n_experts = {}", o.n_experts_used, o.n_experts);
    }
    blocks("expert_ffn_dim (input of ffn_down_exps)", o.expert_ffn_dim);
    if (o.arch == ModelArch::kQwen35Moe) {
      check_positive("shared_ffn_dim", o.shared_ffn_dim);
      blocks("shared_ffn_dim (input of ffn_down_shexp)", o.shared_ffn_dim);
    }
  }
  if (o.arch == ModelArch::kQwen35 || o.arch == ModelArch::kQwen35Moe) {
    check_positive("full_attention_interval", o.full_attention_interval);
    check_positive("conv_kernel", o.conv_kernel);
    check_positive("ssm_key_heads", o.ssm_key_heads);
    check_positive("ssm_value_heads", o.ssm_value_heads);
    check_positive("ssm_key_head_dim", o.ssm_key_head_dim);
    check_positive("ssm_value_head_dim", o.ssm_value_head_dim);
    if (o.ssm_value_heads % o.ssm_key_heads != 0) {
      fail("demo model: ssm_value_heads = {} is not a multiple of ssm_key_heads = {}",
           o.ssm_value_heads, o.ssm_key_heads);
    }
    const uint32_t n_rot = o.n_rot ? o.n_rot : o.head_dim / 4;
    if (n_rot == 0 || n_rot % 2 != 0 || n_rot > o.head_dim) {
      fail("demo model: n_rot = {} must be even, positive and at most head_dim = {}", n_rot,
           o.head_dim);
    }
    blocks("ssm_value_heads*ssm_value_head_dim (input of ssm_out)",
           uint64_t{o.ssm_value_heads} * o.ssm_value_head_dim);
  } else if (o.arch != ModelArch::kQwen3 && o.arch != ModelArch::kQwen3Moe) {
    internal_error("demo model: unknown ModelArch {}", static_cast<int>(o.arch));
  }
}

// Adds a tensor of normal(mean, std) values in `type`, generated and quantized row by row so a
// large model never holds its weights as f32.
void add_random(GgufWriter& w, const std::string& name, std::vector<uint64_t> dims, GgmlType type,
                double mean, double std, const DemoModelOptions& o) {
  uint64_t n_rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) n_rows *= dims[i];
  const int64_t row_len = static_cast<int64_t>(dims[0]);
  const size_t row_size = row_bytes(type, row_len);
  Rng rng = tensor_rng(o.seed, name);
  std::vector<float> row(dims[0]);
  std::vector<uint8_t> bytes(row_size * n_rows);
  const auto given = o.weights.find(name);
  if (given != o.weights.end() && given->second.size() != dims[0] * n_rows) {
    fail("demo model: {} holds {} trained values, its shape {} elements", name,
         given->second.size(), dims[0] * n_rows);
  }
  const uint64_t drawn = given != o.weights.end() ? n_rows
                         : o.distinct_rows        ? std::min<uint64_t>(o.distinct_rows, n_rows)
                                                  : n_rows;
  for (uint64_t r = 0; r < drawn; ++r) {
    if (given != o.weights.end()) {
      std::copy_n(given->second.begin() + r * dims[0], dims[0], row.begin());
    } else {
      for (float& v : row) v = static_cast<float>(mean + std * rng.normal());
    }
    quantize(type, row, std::span<uint8_t>(bytes).subspan(r * row_size, row_size));
  }
  for (uint64_t r = drawn; r < n_rows; ++r)  // the drawn rows repeated
    std::memcpy(bytes.data() + r * row_size, bytes.data() + (r % drawn) * row_size, row_size);
  w.add_tensor(name, std::move(dims), type, std::move(bytes));
}

// The type of the matrix `name` whose rows hold ne0 values: the preset's rule, else weight_type.
GgmlType matrix_type(const DemoModelOptions& o, const std::string& name, uint64_t ne0) {
  if (o.preset.empty()) return o.weight_type;
  const bool hybrid = o.arch == ModelArch::kQwen35 || o.arch == ModelArch::kQwen35Moe;
  const uint32_t blocks = o.n_layers + (hybrid ? o.nextn_layers : 0);
  const PresetModel model{o.preset_blocks ? o.preset_blocks : blocks, o.n_heads / o.n_kv_heads,
                          o.tied_output};
  std::string as = name;  // "blk.N.role" as the block it stands for
  if (uint32_t i = 0; !o.preset_layers.empty() && std::sscanf(name.c_str(), "blk.%u.", &i) == 1) {
    if (i >= o.preset_layers.size())
      fail("demo model: preset_layers has {} entries, block {} needs one", o.preset_layers.size(),
           i);
    as = fmt::format("blk.{}.{}", o.preset_layers[i], name.substr(name.find('.', 4) + 1));
  }
  return preset_type(preset_named(o.preset), as, ne0, model);
}

// Adds a matrix (its type: matrix_type) of normal(0, std) values.
void add_matrix(GgufWriter& w, const std::string& name, std::vector<uint64_t> dims, double std,
                const DemoModelOptions& o) {
  const GgmlType type = matrix_type(o, name, dims[0]);
  add_random(w, name, std::move(dims), type, 0.0, std, o);
}

// Adds an F32 tensor of `n` values f(normal(0, 1)), seeded by its name.
template <typename F>
void add_f32(GgufWriter& w, const std::string& name, uint64_t n, uint64_t seed, F f) {
  Rng rng = tensor_rng(seed, name);
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(f(rng.normal()));
  std::vector<uint8_t> bytes(n * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  w.add_tensor(name, {n}, GgmlType::F32, std::move(bytes));
}

void add_norm(GgufWriter& w, const std::string& name, uint64_t n, const DemoModelOptions& o) {
  add_random(w, name, {n}, GgmlType::F32, 1.0, kNormJitter, o);
}

void write_tokenizer(GgufWriter& w, const VocabData& vocab, const DemoModelOptions& o) {
  std::vector<std::string> tokens = vocab.tokens;
  std::vector<int32_t> types = vocab.token_types;
  if (types.empty()) types.assign(tokens.size(), kTypeNormal);
  if (types.size() != tokens.size()) {
    fail("demo model: vocabulary has {} tokens but {} token types", tokens.size(), types.size());
  }
  for (size_t i = tokens.size(); i < o.vocab_size; ++i) {
    tokens.push_back(fmt::format("[PAD{}]", i));
    types.push_back(kTypeUnused);
  }
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", vocab.pre);
  w.set_array_strings("tokenizer.ggml.tokens", std::span<const std::string>(tokens));
  w.set_array("tokenizer.ggml.token_type", std::span<const int32_t>(types));
  w.set_array_strings("tokenizer.ggml.merges", std::span<const std::string>(vocab.merges));
  const auto set_id = [&](std::string_view key, std::optional<TokenId> id) {
    if (!id) return;
    if (*id < 0 || static_cast<size_t>(*id) >= tokens.size()) {
      fail("demo model: {} = {} is outside the vocabulary of {} tokens", key, *id, tokens.size());
    }
    w.set_u32(key, static_cast<uint32_t>(*id));
  };
  set_id("tokenizer.ggml.bos_token_id", vocab.bos_id);
  set_id("tokenizer.ggml.eos_token_id", vocab.eos_id);
  set_id("tokenizer.ggml.eot_token_id", vocab.eot_id);
  set_id("tokenizer.ggml.padding_token_id", vocab.pad_id);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  if (!o.chat_template.empty()) w.set_string("tokenizer.chat_template", o.chat_template);
}

std::string from_hex(std::string_view hex, const std::string& path, size_t line_no) {
  const auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    fail("vocab file {}: line {}: bad hex digit '{}'", path, line_no, c);
  };
  if (hex.size() % 2) fail("vocab file {}: line {}: odd-length hex", path, line_no);
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  }
  return out;
}

}  // namespace

VocabData synthetic_vocab() {
  VocabData v;
  v.pre = "qwen2";
  for (uint32_t b = 0; b < kByteTokens; ++b) {
    v.tokens.push_back(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  }
  // Merges in rank order; each merged piece becomes a token. "Ġ" is the byte-level space.
  const std::array<std::pair<std::string_view, std::string_view>, 10> merges = {{
      {"h", "e"},
      {"l", "l"},
      {"Ġ", "t"},
      {"Ġt", "he"},
      {"he", "ll"},
      {"hell", "o"},
      {"Ġ", "w"},
      {"o", "r"},
      {"Ġw", "or"},
      {"l", "d"},
  }};
  for (const auto& [a, b] : merges) {
    v.merges.push_back(fmt::format("{} {}", a, b));
    v.tokens.push_back(fmt::format("{}{}", a, b));
  }
  v.merges.push_back("Ġwor ld");
  v.tokens.push_back("Ġworld");
  v.token_types.assign(v.tokens.size(), kTypeNormal);
  const auto add_special = [&](std::string text, int32_t type) {
    v.tokens.push_back(std::move(text));
    v.token_types.push_back(type);
    return static_cast<TokenId>(v.tokens.size() - 1);
  };
  const TokenId endoftext = add_special("<|endoftext|>", kTypeControl);
  add_special("<|im_start|>", kTypeControl);
  const TokenId im_end = add_special("<|im_end|>", kTypeControl);
  add_special("<think>", kTypeUserDefined);
  add_special("</think>", kTypeUserDefined);
  v.bos_id = v.pad_id = endoftext;
  v.eos_id = v.eot_id = im_end;
  return v;
}

VocabData read_vocab_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("vocab file {}: cannot open", path);
  std::string line;
  size_t line_no = 0;
  const auto next_line = [&](std::string_view what) {
    if (!std::getline(in, line)) fail("vocab file {}: expected {}, got end of file", path, what);
    ++line_no;
  };
  // "KEY VALUE" with a decimal value.
  const auto field = [&](std::string_view key) -> uint64_t {
    next_line(key);
    if (!line.starts_with(key) || line.size() <= key.size() + 1 || line[key.size()] != ' ') {
      fail("vocab file {}: line {}: expected '{} N', got '{}'", path, line_no, key,
           line.substr(0, 40));
    }
    try {
      return std::stoull(line.substr(key.size() + 1));
    } catch (const std::exception&) {
      fail("vocab file {}: line {}: bad number in '{}'", path, line_no, line.substr(0, 40));
    }
  };
  VocabData v;
  next_line("pre");
  if (!line.starts_with("pre ")) fail("vocab file {}: line 1 must be 'pre NAME'", path);
  v.pre = line.substr(4);
  v.bos_id = static_cast<TokenId>(field("bos"));
  v.eos_id = static_cast<TokenId>(field("eos"));
  v.eot_id = static_cast<TokenId>(field("eot"));
  v.pad_id = static_cast<TokenId>(field("pad"));
  const uint64_t n_tokens = field("tokens");
  for (uint64_t i = 0; i < n_tokens; ++i) {
    next_line("a token");
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) {
      fail("vocab file {}: line {}: expected 'TYPE HEX'", path, line_no);
    }
    v.token_types.push_back(std::atoi(line.substr(0, space).c_str()));
    v.tokens.push_back(from_hex(std::string_view(line).substr(space + 1), path, line_no));
  }
  const uint64_t n_merges = field("merges");
  for (uint64_t i = 0; i < n_merges; ++i) {
    next_line("a merge");
    v.merges.push_back(from_hex(line, path, line_no));
  }
  return v;
}

namespace {

// Scales keep activations O(1): a projection's std is 1/sqrt(fan_in) (its inputs are
// RMS-normalised), embeddings 1/sqrt(dim) so tied logits start near unit variance.
double fan_in_std(uint64_t fan_in) { return 1.0 / std::sqrt(double(fan_in)); }

// Full attention of one block: qwen3's, or qwen35's per-head [q | gate] projection
// (docs/qwen.md#qwen35-tensors).
void add_attention(GgufWriter& w, const DemoModelOptions& o, uint32_t i, bool gated) {
  const uint64_t dim = o.dim, q_dim = uint64_t{o.n_heads} * o.head_dim,
                 kv_dim = uint64_t{o.n_kv_heads} * o.head_dim;
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  add_matrix(w, name("attn_q"), {dim, (gated ? 2 : 1) * q_dim}, fan_in_std(dim), o);
  add_matrix(w, name("attn_k"), {dim, kv_dim}, fan_in_std(dim), o);
  add_matrix(w, name("attn_v"), {dim, kv_dim}, fan_in_std(dim), o);
  add_matrix(w, name("attn_output"), {q_dim, dim}, fan_in_std(q_dim), o);
  add_norm(w, name("attn_q_norm"), o.head_dim, o);
  add_norm(w, name("attn_k_norm"), o.head_dim, o);
}

// Gated DeltaNet tensors of one block (docs/qwen.md#qwen35-tensors). The conv taps, dt_bias and
// ssm_a stay F32 as in llama.cpp's files; ssm_a = -exp(A_log) is negative, as the converter
// writes it.
void add_gdn(GgufWriter& w, const DemoModelOptions& o, uint32_t i) {
  const uint64_t dim = o.dim, hv = o.ssm_value_heads;
  const uint64_t value_dim = hv * o.ssm_value_head_dim;
  const uint64_t conv_dim = 2 * uint64_t{o.ssm_key_heads} * o.ssm_key_head_dim + value_dim;
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  add_matrix(w, name("attn_qkv"), {dim, conv_dim}, fan_in_std(dim), o);
  add_matrix(w, name("attn_gate"), {dim, value_dim}, fan_in_std(dim), o);
  add_random(w, name("ssm_conv1d"), {o.conv_kernel, conv_dim}, GgmlType::F32, 0.0,
             fan_in_std(o.conv_kernel), o);
  add_f32(w, fmt::format("blk.{}.ssm_dt.bias", i), hv, o.seed, [](double r) { return r; });
  add_f32(w, fmt::format("blk.{}.ssm_a", i), hv, o.seed,
          [](double r) { return -std::exp(kALogMean + kALogStd * r); });
  add_matrix(w, name("ssm_beta"), {dim, hv}, fan_in_std(dim), o);
  add_matrix(w, name("ssm_alpha"), {dim, hv}, fan_in_std(dim), o);
  add_norm(w, name("ssm_norm"), o.ssm_value_head_dim, o);
  add_matrix(w, name("ssm_out"), {value_dim, dim}, fan_in_std(value_dim), o);
}

// Dense SwiGLU, or router + experts (+ shared expert and its gate for qwen35moe)
// (docs/qwen.md#moe-ffn).
void add_ffn(GgufWriter& w, const DemoModelOptions& o, uint32_t i) {
  const uint64_t dim = o.dim;
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  if (o.arch == ModelArch::kQwen3 || o.arch == ModelArch::kQwen35) {
    const uint64_t ffn = o.ffn_dim;
    add_matrix(w, name("ffn_gate"), {dim, ffn}, fan_in_std(dim), o);
    add_matrix(w, name("ffn_up"), {dim, ffn}, fan_in_std(dim), o);
    add_matrix(w, name("ffn_down"), {ffn, dim}, fan_in_std(ffn), o);
    return;
  }
  const uint64_t e = o.n_experts, f = o.expert_ffn_dim, s = o.shared_ffn_dim;
  add_random(w, name("ffn_gate_inp"), {dim, e}, GgmlType::F32, 0.0, fan_in_std(dim), o);
  add_matrix(w, name("ffn_gate_exps"), {dim, f, e}, fan_in_std(dim), o);
  add_matrix(w, name("ffn_up_exps"), {dim, f, e}, fan_in_std(dim), o);
  add_matrix(w, name("ffn_down_exps"), {f, dim, e}, fan_in_std(f), o);
  if (o.arch != ModelArch::kQwen35Moe) return;
  add_matrix(w, name("ffn_gate_shexp"), {dim, s}, fan_in_std(dim), o);
  add_matrix(w, name("ffn_up_shexp"), {dim, s}, fan_in_std(dim), o);
  add_matrix(w, name("ffn_down_shexp"), {s, dim}, fan_in_std(s), o);
  add_random(w, name("ffn_gate_inp_shexp"), {dim}, GgmlType::F32, 0.0, fan_in_std(dim), o);
}

// An MTP block (docs/qwen.md#qwen35-tensors): a full-attention block plus the nextn projection
// and norms. Readers skip it; it is here so that they are tested to.
void add_mtp_block(GgufWriter& w, const DemoModelOptions& o, uint32_t i) {
  const uint64_t dim = o.dim;
  add_norm(w, layer_tensor_name(i, "attn_norm"), dim, o);
  add_attention(w, o, i, /*gated=*/true);
  add_norm(w, layer_tensor_name(i, "post_attention_norm"), dim, o);
  add_ffn(w, o, i);
  add_matrix(w, layer_tensor_name(i, "nextn.eh_proj"), {2 * dim, dim}, fan_in_std(2 * dim), o);
  add_norm(w, layer_tensor_name(i, "nextn.enorm"), dim, o);
  add_norm(w, layer_tensor_name(i, "nextn.hnorm"), dim, o);
}

// The {arch}.* keys of the hybrid and MoE architectures (docs/qwen.md#qwen35-metadata).
void write_arch_keys(GgufWriter& w, const DemoModelOptions& o, std::string_view arch) {
  const auto key = [&](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };
  const bool hybrid = o.arch == ModelArch::kQwen35 || o.arch == ModelArch::kQwen35Moe;
  if (o.arch == ModelArch::kQwen3Moe || o.arch == ModelArch::kQwen35Moe) {
    w.set_u32(key("expert_count"), o.n_experts);
    w.set_u32(key("expert_used_count"), o.n_experts_used);
    w.set_u32(key("expert_feed_forward_length"), o.expert_ffn_dim);
    if (o.arch == ModelArch::kQwen35Moe) {
      w.set_u32(key("expert_shared_feed_forward_length"), o.shared_ffn_dim);
    }
  } else {
    w.set_u32(key("feed_forward_length"), o.ffn_dim);
  }
  if (!hybrid) return;
  const uint32_t n_rot = o.n_rot ? o.n_rot : o.head_dim / 4;
  w.set_u32(key("rope.dimension_count"), n_rot);
  // MRoPE sections (required by llama.cpp's loader); for text every pair rotates as plain NEOX,
  // so the demo puts all n_rot/2 pairs in the first section unless the shape is Qwen3.5's.
  const std::array<int32_t, 4> sections =
      n_rot == kQwen35Rot ? kQwen35Sections : std::array<int32_t, 4>{int32_t(n_rot / 2), 0, 0, 0};
  w.set_array(key("rope.dimension_sections"), std::span<const int32_t>(sections));
  w.set_u32(key("full_attention_interval"), o.full_attention_interval);
  w.set_u32(key("ssm.conv_kernel"), o.conv_kernel);
  w.set_u32(key("ssm.state_size"), o.ssm_key_head_dim);
  w.set_u32(key("ssm.group_count"), o.ssm_key_heads);
  w.set_u32(key("ssm.time_step_rank"), o.ssm_value_heads);
  w.set_u32(key("ssm.inner_size"), o.ssm_value_heads * o.ssm_value_head_dim);
  if (o.nextn_layers > 0) w.set_u32(key("nextn_predict_layers"), o.nextn_layers);
}

}  // namespace

GgufWriter build_demo_model(const DemoModelOptions& o) {
  const VocabData vocab = o.vocab ? *o.vocab : synthetic_vocab();
  check_options(o, vocab.tokens.size());
  const uint64_t n_vocab = o.vocab_size ? o.vocab_size : vocab.tokens.size();
  const uint64_t dim = o.dim;
  const GgmlType wt = o.weight_type;
  const std::string_view arch = arch_name(o.arch);
  const bool hybrid = o.arch == ModelArch::kQwen35 || o.arch == ModelArch::kQwen35Moe;
  const uint32_t n_blocks = o.n_layers + (hybrid ? o.nextn_layers : 0);
  const auto key = [&](std::string_view suffix) { return fmt::format("{}.{}", arch, suffix); };

  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_string("general.type", "model");
  w.set_string("general.name",
               !o.name.empty()
                   ? o.name
                   : fmt::format("ugrad demo {} {}L-{}d {} (random weights)", arch, o.n_layers,
                                 o.dim, o.preset.empty() ? format_of(wt).name : o.preset));
  w.set_string("general.description",
               !o.description.empty()
                   ? o.description
                   : fmt::format("ugrad demo: random weights, meaningless output. Written by "
                                 "ugrad's make_demo_model to exercise the {} code path; not a "
                                 "trained model.",
                                 o.arch == ModelArch::kQwen3 ? std::string_view("Qwen3") : arch));
  w.set_u32("general.quantization_version", kGgmlQuantizationVersion);
  for (const auto& [type, ftype] : kFileTypes) {
    if (type == wt && o.preset.empty()) w.set_u32("general.file_type", ftype);
  }
  if (!o.preset.empty()) w.set_u32("general.file_type", preset_named(o.preset).file_type);
  w.set_u32(key("block_count"), n_blocks);
  w.set_u32(key("context_length"), o.context_length);
  w.set_u32(key("embedding_length"), o.dim);
  if (o.arch == ModelArch::kQwen3) {
    w.set_u32(key("feed_forward_length"), o.ffn_dim);
  }
  w.set_u32(key("attention.head_count"), o.n_heads);
  w.set_u32(key("attention.head_count_kv"), o.n_kv_heads);
  w.set_u32(key("attention.key_length"), o.head_dim);
  w.set_u32(key("attention.value_length"), o.head_dim);
  w.set_f32(key("rope.freq_base"), o.rope_theta);
  w.set_f32(key("attention.layer_norm_rms_epsilon"), o.rms_eps);
  if (o.arch != ModelArch::kQwen3) write_arch_keys(w, o, arch);
  write_tokenizer(w, vocab, o);

  add_matrix(w, "token_embd.weight", {dim, n_vocab}, fan_in_std(dim), o);
  // qwen35* name the pre-FFN norm post_attention_norm (docs/qwen.md#qwen35-tensors).
  const std::string_view ffn_norm = hybrid ? "post_attention_norm" : "ffn_norm";
  for (uint32_t i = 0; i < o.n_layers; ++i) {
    add_norm(w, layer_tensor_name(i, "attn_norm"), dim, o);
    if (hybrid && (i + 1) % o.full_attention_interval != 0) {
      add_gdn(w, o, i);
    } else {
      add_attention(w, o, i, hybrid);
    }
    add_norm(w, layer_tensor_name(i, ffn_norm), dim, o);
    add_ffn(w, o, i);
  }
  for (uint32_t i = o.n_layers; i < n_blocks; ++i) add_mtp_block(w, o, i);
  add_norm(w, "output_norm.weight", dim, o);
  if (!o.tied_output) {
    add_matrix(w, "output.weight", {dim, n_vocab}, fan_in_std(dim), o);
  }
  for (const auto& [name, values] : o.weights)
    if (!w.has_tensor(name))
      fail("demo model: trained weights for {}, a tensor it does not have", name);
  return w;
}

void write_demo_model(const std::string& path, const DemoModelOptions& options) {
  build_demo_model(options).write(path);
}

}  // namespace ugrad::llm
