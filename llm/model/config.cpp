#include "llm/model/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <unordered_set>

#include "llm/quant/dequantize.h"
#include "uop/error.h"

namespace ugrad::llm {

namespace {

// Limits that keep every derived size (heads * head_dim, rows * cols) far from overflow; real
// Qwen models are 1-3 orders of magnitude below each.
constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxWidth = uint64_t{1} << 20;  // dim, ffn_dim, q_dim, kv_dim
constexpr uint64_t kMaxVocab = uint64_t{1} << 24;  // token_embd rows
constexpr uint64_t kMaxContext = uint64_t{1} << 24;
constexpr float kDefaultRopeTheta = 10000.0f;  // llama.cpp's default when rope.freq_base is absent

constexpr std::array<std::pair<ModelArch, std::string_view>, 4> kArchNames = {{
    {ModelArch::kQwen3, "qwen3"},
    {ModelArch::kQwen3Moe, "qwen3moe"},
    {ModelArch::kQwen35, "qwen35"},
    {ModelArch::kQwen35Moe, "qwen35moe"},
}};

// Reads `{arch}.{suffix}` keys with the checks every hyperparameter needs.
class ArchKeys {
 public:
  ArchKeys(const GgufFile& file, std::string_view arch) : file_(file), arch_(arch) {}

  std::string key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }

  // A required positive integer no larger than `max`.
  uint32_t required(std::string_view suffix, uint64_t max) const {
    const std::string k = key(suffix);
    if (!file_.has(k)) fail("model: metadata key '{}' is missing (required for {})", k, arch_);
    return checked(k, file_.get_u64(k), max);
  }

  // An optional positive integer no larger than `max`; `fallback` when absent.
  uint32_t optional(std::string_view suffix, uint64_t max, uint32_t fallback) const {
    const std::string k = key(suffix);
    return file_.has(k) ? checked(k, file_.get_u64(k), max) : fallback;
  }

  // A float that must be finite and positive.
  float positive_float(std::string_view suffix, std::optional<float> fallback) const {
    const std::string k = key(suffix);
    if (!file_.has(k)) {
      if (!fallback) fail("model: metadata key '{}' is missing (required for {})", k, arch_);
      return *fallback;
    }
    const float v = file_.get_f32(k);
    if (!std::isfinite(v) || v <= 0) fail("model: metadata '{}' = {} must be positive", k, v);
    return v;
  }

 private:
  static uint32_t checked(const std::string& k, uint64_t v, uint64_t max) {
    if (v == 0 || v > max) fail("model: metadata '{}' = {} must be in [1, {}]", k, v, max);
    return static_cast<uint32_t>(v);
  }

  const GgufFile& file_;
  std::string_view arch_;
};

// tokenizer.ggml.<name>_token_id, if present, must index the vocabulary.
std::optional<int32_t> token_id_key(const GgufFile& file, std::string_view key, uint32_t vocab) {
  if (!file.has(key)) return std::nullopt;
  const int64_t id = file.get_i64(key);
  if (id < 0 || id >= vocab) {
    fail("model: metadata '{}' = {} is outside the vocabulary [0, {})", key, id, vocab);
  }
  return static_cast<int32_t>(id);
}

void read_qwen3(const GgufFile& file, ModelConfig& c) {
  const ArchKeys keys(file, "qwen3");
  c.n_layers = keys.required("block_count", kMaxLayers);
  c.dim = keys.required("embedding_length", kMaxWidth);
  c.ffn_dim = keys.required("feed_forward_length", kMaxWidth);
  c.context_length = keys.required("context_length", kMaxContext);
  c.n_heads = keys.required("attention.head_count", kMaxWidth);
  c.n_kv_heads = keys.optional("attention.head_count_kv", kMaxWidth, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0) {
    fail("model: metadata '{}' = {} is not a multiple of '{}' = {}",
         keys.key("attention.head_count"), c.n_heads, keys.key("attention.head_count_kv"),
         c.n_kv_heads);
  }
  // llama.cpp's default head size is dim / n_heads; Qwen3 files always carry key_length.
  const std::string key_length = keys.key("attention.key_length");
  if (!file.has(key_length) && c.dim % c.n_heads != 0) {
    fail(
        "model: metadata '{}' is missing and embedding_length {} is not a multiple of "
        "head_count {}",
        key_length, c.dim, c.n_heads);
  }
  c.head_dim = keys.optional("attention.key_length", kMaxWidth, c.dim / c.n_heads);
  const uint32_t value_length = keys.optional("attention.value_length", kMaxWidth, c.head_dim);
  if (value_length != c.head_dim) {
    fail("model: metadata '{}' = {} differs from '{}' = {} (qwen3 needs equal K and V head sizes)",
         keys.key("attention.value_length"), value_length, key_length, c.head_dim);
  }
  if (c.head_dim % 2 != 0) {
    fail("model: metadata '{}' = {} must be even (RoPE rotates pairs)", key_length, c.head_dim);
  }
  if (uint64_t{c.n_heads} * c.head_dim > kMaxWidth) {
    fail("model: head_count {} x key_length {} exceeds {}", c.n_heads, c.head_dim, kMaxWidth);
  }
  c.n_rot = keys.optional("rope.dimension_count", kMaxWidth, c.head_dim);
  if (c.n_rot != c.head_dim) {
    fail("model: metadata '{}' = {} differs from '{}' = {} (qwen3 rotates the whole head)",
         keys.key("rope.dimension_count"), c.n_rot, key_length, c.head_dim);
  }
  c.rms_eps = keys.positive_float("attention.layer_norm_rms_epsilon", std::nullopt);
  c.rope_theta = keys.positive_float("rope.freq_base", kDefaultRopeTheta);
  if (const std::string k = keys.key("rope.scaling.type"); file.has(k)) {
    const std::string_view type = file.get_string(k);
    if (type != "none") fail("model: metadata '{}' = '{}' is not supported", k, type);
  }
}

std::string dims_string(std::span<const uint64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Looks up tensors by name and checks them, remembering every name it was asked for.
class TensorChecker {
 public:
  explicit TensorChecker(const GgufFile& file) : file_(file) {}

  // `what` spells the expected dims in config terms, e.g. "[dim, q_dim]".
  const GgufTensor* expect(const std::string& name, std::vector<uint64_t> dims,
                           std::string_view what) {
    expected_.insert(name);
    const GgufTensor* t = file_.find_tensor(name);
    if (!t) fail("model: tensor '{}' is missing (expected {} = {})", name, what, dims_string(dims));
    if (t->dims != dims) {
      fail("model: tensor '{}' has dims {} but the config expects {} = {}", name,
           dims_string(t->dims), what, dims_string(dims));
    }
    if (!can_dequantize(t->type)) {
      fail("model: tensor '{}' has type {}, which ugrad cannot dequantize", name,
           format_of(t->type).name);
    }
    return t;
  }

  // Every tensor in the file must have been expected.
  void check_no_extra(std::string_view arch) const {
    for (const GgufTensor& t : file_.tensors()) {
      if (!expected_.contains(std::string(t.name))) {
        fail("model: tensor '{}' {} is not part of a {} model with this config", t.name,
             dims_string(t.dims), arch);
      }
    }
  }

 private:
  const GgufFile& file_;
  std::unordered_set<std::string> expected_;
};

}  // namespace

std::string_view arch_name(ModelArch arch) {
  for (const auto& [a, name] : kArchNames) {
    if (a == arch) return name;
  }
  internal_error("arch_name: unknown ModelArch {}", static_cast<int>(arch));
}

std::optional<ModelArch> parse_arch(std::string_view name) {
  for (const auto& [a, n] : kArchNames) {
    if (n == name) return a;
  }
  return std::nullopt;
}

std::string layer_tensor_name(uint32_t layer, std::string_view role) {
  return fmt::format("blk.{}.{}.weight", layer, role);
}

ModelConfig ModelConfig::from_gguf(const GgufFile& file) {
  constexpr std::string_view kArchKey = "general.architecture";
  if (!file.has(kArchKey)) fail("model: metadata key '{}' is missing", kArchKey);
  const std::string_view name = file.get_string(kArchKey);
  const std::optional<ModelArch> arch = parse_arch(name);
  if (!arch) fail("model: metadata '{}' = '{}' is not a known architecture", kArchKey, name);
  if (*arch != ModelArch::kQwen3) {
    fail("model: architecture '{}' ({}) is not supported yet", name, kArchKey);
  }
  ModelConfig c;
  c.arch = *arch;
  read_qwen3(file, c);

  const GgufTensor& embd = file.tensor("token_embd.weight");
  if (embd.dims.size() != 2 || embd.dims[1] == 0 || embd.dims[1] > kMaxVocab) {
    fail(
        "model: tensor 'token_embd.weight' has dims {}; expected [dim, vocab] with vocab in "
        "[1, {}]",
        dims_string(embd.dims), kMaxVocab);
  }
  c.vocab_size = static_cast<uint32_t>(embd.dims[1]);
  constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
  if (file.has(kTokensKey)) {
    const uint64_t n_tokens = file.get_array(kTokensKey).count;
    if (n_tokens != c.vocab_size) {
      fail("model: metadata '{}' holds {} tokens but token_embd.weight has {} rows", kTokensKey,
           n_tokens, c.vocab_size);
    }
  }
  if (const std::string k = fmt::format("{}.vocab_size", name); file.has(k)) {
    if (const uint64_t v = file.get_u64(k); v != c.vocab_size) {
      fail("model: metadata '{}' = {} but token_embd.weight has {} rows", k, v, c.vocab_size);
    }
  }
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  c.bos_id = token_id_key(file, "tokenizer.ggml.bos_token_id", c.vocab_size);
  c.eos_id = token_id_key(file, "tokenizer.ggml.eos_token_id", c.vocab_size);
  c.eot_id = token_id_key(file, "tokenizer.ggml.eot_token_id", c.vocab_size);
  c.pad_id = token_id_key(file, "tokenizer.ggml.padding_token_id", c.vocab_size);
  return c;
}

ModelWeights ModelWeights::from_gguf(const GgufFile& file, const ModelConfig& c) {
  if (c.arch != ModelArch::kQwen3) {
    fail("model: weights of architecture '{}' are not supported yet", arch_name(c.arch));
  }
  TensorChecker check(file);
  const uint64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim(), ffn = c.ffn_dim;
  ModelWeights w;
  w.token_embd = check.expect("token_embd.weight", {dim, c.vocab_size}, "[dim, vocab]");
  w.output_norm = check.expect("output_norm.weight", {dim}, "[dim]");
  w.output = c.tied_output ? w.token_embd
                           : check.expect("output.weight", {dim, c.vocab_size}, "[dim, vocab]");
  w.layers.resize(c.n_layers);
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[i];
    const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
    l.attn_norm = check.expect(name("attn_norm"), {dim}, "[dim]");
    l.attn_q = check.expect(name("attn_q"), {dim, q_dim}, "[dim, n_heads*head_dim]");
    l.attn_k = check.expect(name("attn_k"), {dim, kv_dim}, "[dim, n_kv_heads*head_dim]");
    l.attn_v = check.expect(name("attn_v"), {dim, kv_dim}, "[dim, n_kv_heads*head_dim]");
    l.attn_output = check.expect(name("attn_output"), {q_dim, dim}, "[n_heads*head_dim, dim]");
    l.attn_q_norm = check.expect(name("attn_q_norm"), {c.head_dim}, "[head_dim]");
    l.attn_k_norm = check.expect(name("attn_k_norm"), {c.head_dim}, "[head_dim]");
    l.ffn_norm = check.expect(name("ffn_norm"), {dim}, "[dim]");
    l.ffn_gate = check.expect(name("ffn_gate"), {dim, ffn}, "[dim, ffn_dim]");
    l.ffn_up = check.expect(name("ffn_up"), {dim, ffn}, "[dim, ffn_dim]");
    l.ffn_down = check.expect(name("ffn_down"), {ffn, dim}, "[ffn_dim, dim]");
  }
  check.check_no_extra(arch_name(c.arch));
  return w;
}

}  // namespace ugrad::llm
