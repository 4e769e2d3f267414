#include "llm/config/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "base/error.h"
#include "base/quote.h"
#include "llm/quant/dequantize.h"

namespace ugrad::llm {

namespace {

// Limits that keep every derived size (heads * head_dim, rows * cols) far from overflow; real
// Qwen models are 1-3 orders of magnitude below each.
constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxWidth = uint64_t{1} << 20;  // dim, ffn_dim, q_dim, kv_dim
constexpr uint64_t kMaxVocab = uint64_t{1} << 24;  // token_embd rows
constexpr uint64_t kMaxContext = uint64_t{1} << 24;
constexpr float kDefaultRopeTheta = 10000.0f;  // llama.cpp's default when rope.freq_base is absent
constexpr uint64_t kMaxExperts = 4096;
constexpr uint64_t kMaxConvKernel = 64;
// llama.cpp's default (docs/qwen.md#qwen35-metadata).
constexpr uint32_t kDefaultFullAttentionInterval = 4;

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
    if (!file_.has(k)) fail("model: metadata key {} is missing (required for {})", quote(k), arch_);
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
      if (!fallback) fail("model: metadata key {} is missing (required for {})", quote(k), arch_);
      return *fallback;
    }
    const float v = file_.get_f32(k);
    if (!std::isfinite(v) || v <= 0) fail("model: metadata {} = {} must be positive", quote(k), v);
    return v;
  }

 private:
  static uint32_t checked(const std::string& k, uint64_t v, uint64_t max) {
    if (v == 0 || v > max) fail("model: metadata {} = {} must be in [1, {}]", quote(k), v, max);
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
    fail("model: metadata {} = {} is outside the vocabulary [0, {})", quote(key), id, vocab);
  }
  return static_cast<int32_t>(id);
}

bool is_moe(ModelArch a) { return a == ModelArch::kQwen3Moe || a == ModelArch::kQwen35Moe; }
bool is_hybrid(ModelArch a) { return a == ModelArch::kQwen35 || a == ModelArch::kQwen35Moe; }

// The transformer keys every architecture has (docs/qwen.md#qwen3-metadata,
// docs/qwen.md#qwen35-metadata). Hybrid models rotate only the first rope.dimension_count dims of
// a head; qwen3 and qwen3moe rotate all of it.
void read_transformer(const GgufFile& file, ModelConfig& c) {
  const std::string_view arch = arch_name(c.arch);
  const ArchKeys keys(file, arch);
  c.n_layers = keys.required("block_count", kMaxLayers);
  c.dim = keys.required("embedding_length", kMaxWidth);
  if (!is_moe(c.arch)) c.ffn_dim = keys.required("feed_forward_length", kMaxWidth);
  c.context_length = keys.required("context_length", kMaxContext);
  c.n_heads = keys.required("attention.head_count", kMaxWidth);
  c.n_kv_heads = keys.optional("attention.head_count_kv", kMaxWidth, c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0) {
    fail("model: metadata {} = {} is not a multiple of {} = {}",
         quote(keys.key("attention.head_count")), c.n_heads,
         quote(keys.key("attention.head_count_kv")), c.n_kv_heads);
  }
  // llama.cpp's default head size is dim / n_heads; Qwen3 files always carry key_length.
  const std::string key_length = keys.key("attention.key_length");
  if (!file.has(key_length) && c.dim % c.n_heads != 0) {
    fail(
        "model: metadata {} is missing and embedding_length {} is not a multiple of "
        "head_count {}",
        quote(key_length), c.dim, c.n_heads);
  }
  c.head_dim = keys.optional("attention.key_length", kMaxWidth, c.dim / c.n_heads);
  const uint32_t value_length = keys.optional("attention.value_length", kMaxWidth, c.head_dim);
  if (value_length != c.head_dim) {
    fail("model: metadata {} = {} differs from {} = {} ({} needs equal K and V head sizes)",
         quote(keys.key("attention.value_length")), value_length, quote(key_length), c.head_dim,
         arch);
  }
  if (c.head_dim % 2 != 0) {
    fail("model: metadata {} = {} must be even (RoPE rotates pairs)", quote(key_length),
         c.head_dim);
  }
  // Hybrid full-attention layers project 2 * n_heads * head_dim (q and gate).
  if (uint64_t{c.n_heads} * c.head_dim * (is_hybrid(c.arch) ? 2 : 1) > kMaxWidth) {
    fail("model: head_count {} x key_length {} exceeds {}", c.n_heads, c.head_dim, kMaxWidth);
  }
  c.n_rot = keys.optional("rope.dimension_count", kMaxWidth, c.head_dim);
  if (is_hybrid(c.arch)) {
    if (c.n_rot % 2 != 0 || c.n_rot > c.head_dim) {
      fail("model: metadata {} = {} must be even and at most {} = {}",
           quote(keys.key("rope.dimension_count")), c.n_rot, quote(key_length), c.head_dim);
    }
  } else if (c.n_rot != c.head_dim) {
    fail("model: metadata {} = {} differs from {} = {} ({} rotates the whole head)",
         quote(keys.key("rope.dimension_count")), c.n_rot, quote(key_length), c.head_dim, arch);
  }
  c.rms_eps = keys.positive_float("attention.layer_norm_rms_epsilon", std::nullopt);
  c.rope_theta = keys.positive_float("rope.freq_base", kDefaultRopeTheta);
  if (const std::string k = keys.key("rope.scaling.type"); file.has(k)) {
    const std::string_view type = file.get_string(k);
    if (type != "none") fail("model: metadata {} = {} is not supported", quote(k), quote(type));
  }
}

// Expert counts and sizes (docs/qwen.md#qwen35-metadata, docs/qwen.md#moe-ffn).
MoeConfig read_moe(const GgufFile& file, ModelArch arch) {
  const ArchKeys keys(file, arch_name(arch));
  MoeConfig m;
  m.n_experts = keys.required("expert_count", kMaxExperts);
  m.n_experts_used = keys.required("expert_used_count", kMaxExperts);
  if (m.n_experts_used > m.n_experts) {
    fail("model: metadata {} = {} exceeds {} = {}", quote(keys.key("expert_used_count")),
         m.n_experts_used, quote(keys.key("expert_count")), m.n_experts);
  }
  m.expert_ffn_dim = keys.required("expert_feed_forward_length", kMaxWidth);
  // qwen3moe has no shared expert; qwen35moe files carry its width.
  if (arch == ModelArch::kQwen35Moe) {
    m.shared_ffn_dim = keys.required("expert_shared_feed_forward_length", kMaxWidth);
  }
  return m;
}

// The Gated DeltaNet sizes and the layer pattern (docs/qwen.md#qwen35-metadata). Shortens
// c.n_layers by the MTP tail.
HybridConfig read_hybrid(const GgufFile& file, ModelConfig& c) {
  const ArchKeys keys(file, arch_name(c.arch));
  HybridConfig h;
  if (const std::string k = keys.key("nextn_predict_layers"); file.has(k)) {
    const uint64_t n = file.get_u64(k);
    if (n >= c.n_layers) {
      fail("model: metadata {} = {} leaves no trunk layers of {} = {}", quote(k), n,
           quote(keys.key("block_count")), c.n_layers);
    }
    h.n_nextn_layers = static_cast<uint32_t>(n);
  }
  const uint32_t block_count = c.n_layers;
  c.n_layers -= h.n_nextn_layers;
  h.conv_kernel = keys.required("ssm.conv_kernel", kMaxConvKernel);
  h.key_head_dim = keys.required("ssm.state_size", kMaxWidth);
  h.n_key_heads = keys.required("ssm.group_count", kMaxWidth);
  h.n_value_heads = keys.required("ssm.time_step_rank", kMaxWidth);
  h.value_dim = keys.required("ssm.inner_size", kMaxWidth);
  if (h.n_value_heads % h.n_key_heads != 0) {
    fail("model: metadata {} = {} is not a multiple of {} = {}",
         quote(keys.key("ssm.time_step_rank")), h.n_value_heads, quote(keys.key("ssm.group_count")),
         h.n_key_heads);
  }
  if (h.value_dim % h.n_value_heads != 0) {
    fail("model: metadata {} = {} is not a multiple of {} = {}", quote(keys.key("ssm.inner_size")),
         h.value_dim, quote(keys.key("ssm.time_step_rank")), h.n_value_heads);
  }
  if (2 * uint64_t{h.n_key_heads} * h.key_head_dim + h.value_dim > kMaxWidth) {
    fail(
        "model: conv width 2 x {} x {} + {} (ssm.group_count x ssm.state_size, ssm.inner_size) "
        "exceeds {}",
        h.n_key_heads, h.key_head_dim, h.value_dim, kMaxWidth);
  }
  h.full_attention_interval =
      keys.optional("full_attention_interval", kMaxLayers, kDefaultFullAttentionInterval);
  h.recurrent.resize(c.n_layers);
  if (const std::string k = keys.key("attention.recurrent_layers"); file.has(k)) {
    const GgufArray& flags = file.get_array(k);
    if (flags.count != block_count && flags.count != c.n_layers) {
      fail("model: metadata {} has {} entries but {} = {}", quote(k), flags.count,
           quote(keys.key("block_count")), block_count);
    }
    const bool is_bool = flags.elem_type == GgufType::BOOL;
    if (!is_bool && !gguf_type_is_integer(flags.elem_type)) {
      fail("model: metadata {} is an array of {}, not of BOOL or integers", quote(k),
           gguf_type_name(flags.elem_type));
    }
    for (uint32_t i = 0; i < c.n_layers; ++i) {
      h.recurrent[i] = is_bool ? flags.bool_at(i) : flags.int_at(i) != 0;
    }
  } else {
    for (uint32_t i = 0; i < c.n_layers; ++i) {
      h.recurrent[i] = (i + 1) % h.full_attention_interval != 0;
    }
  }
  return h;
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
    if (!t)
      fail("model: tensor {} is missing (expected {} = {})", quote(name), what, dims_string(dims));
    if (t->dims != dims) {
      fail("model: tensor {} has dims {} but the config expects {} = {}", quote(name),
           dims_string(t->dims), what, dims_string(dims));
    }
    if (!can_dequantize(t->type)) {
      fail("model: tensor {} has type {}, which ugrad cannot dequantize", quote(name),
           format_of(t->type).name);
    }
    return t;
  }

  // Every tensor in the file must have been expected, except those of blocks
  // [skip_from, skip_to) (the MTP tail layers, which plain decoding does not use).
  void check_no_extra(std::string_view arch, uint32_t skip_from, uint32_t skip_to) const {
    for (const GgufTensor& t : file_.tensors()) {
      if (const std::optional<uint32_t> block = block_of(t.name);
          block && *block >= skip_from && *block < skip_to) {
        continue;
      }
      if (!expected_.contains(std::string(t.name))) {
        fail("model: tensor {} {} is not part of a {} model with this config", quote(t.name),
             dims_string(t.dims), arch);
      }
    }
  }

 private:
  // N of a "blk.N.*" name.
  static std::optional<uint32_t> block_of(std::string_view name) {
    constexpr std::string_view kPrefix = "blk.";
    if (!name.starts_with(kPrefix)) return std::nullopt;
    uint32_t n = 0;
    const char* begin = name.data() + kPrefix.size();
    const char* last = name.data() + name.size();
    const auto [end, ec] = std::from_chars(begin, last, n);
    if (ec != std::errc() || end == begin || end == last || *end != '.') return std::nullopt;
    return n;
  }

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
  if (!file.has(kArchKey)) fail("model: metadata key {} is missing", quote(kArchKey));
  const std::string_view name = file.get_string(kArchKey);
  const std::optional<ModelArch> arch = parse_arch(name);
  if (!arch)
    fail("model: metadata {} = {} is not a known architecture", quote(kArchKey), quote(name));
  ModelConfig c;
  c.arch = *arch;
  read_transformer(file, c);
  if (is_moe(c.arch)) c.moe = read_moe(file, c.arch);
  if (is_hybrid(c.arch)) c.hybrid = read_hybrid(file, c);

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
      fail("model: metadata {} holds {} tokens but token_embd.weight has {} rows",
           quote(kTokensKey), n_tokens, c.vocab_size);
    }
  }
  if (const std::string k = fmt::format("{}.vocab_size", name); file.has(k)) {
    if (const uint64_t v = file.get_u64(k); v != c.vocab_size) {
      fail("model: metadata {} = {} but token_embd.weight has {} rows", quote(k), v, c.vocab_size);
    }
  }
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  c.bos_id = token_id_key(file, "tokenizer.ggml.bos_token_id", c.vocab_size);
  c.eos_id = token_id_key(file, "tokenizer.ggml.eos_token_id", c.vocab_size);
  c.eot_id = token_id_key(file, "tokenizer.ggml.eot_token_id", c.vocab_size);
  c.pad_id = token_id_key(file, "tokenizer.ggml.padding_token_id", c.vocab_size);
  return c;
}

namespace {

// The Gated DeltaNet tensors of layer i (docs/qwen.md#qwen35-tensors).
void expect_gdn(TensorChecker& check, const ModelConfig& c, uint32_t i, LayerWeights& l) {
  const HybridConfig& h = *c.hybrid;
  const uint64_t dim = c.dim, conv = h.conv_dim(), value = h.value_dim, hv = h.n_value_heads;
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  l.attn_qkv = check.expect(name("attn_qkv"), {dim, conv}, "[dim, conv_dim]");
  l.attn_gate = check.expect(name("attn_gate"), {dim, value}, "[dim, ssm.inner_size]");
  l.ssm_conv1d =
      check.expect(name("ssm_conv1d"), {h.conv_kernel, conv}, "[ssm.conv_kernel, conv_dim]");
  l.ssm_dt = check.expect(fmt::format("blk.{}.ssm_dt.bias", i), {hv}, "[ssm.time_step_rank]");
  l.ssm_a = check.expect(fmt::format("blk.{}.ssm_a", i), {hv}, "[ssm.time_step_rank]");
  l.ssm_beta = check.expect(name("ssm_beta"), {dim, hv}, "[dim, ssm.time_step_rank]");
  l.ssm_alpha = check.expect(name("ssm_alpha"), {dim, hv}, "[dim, ssm.time_step_rank]");
  l.ssm_norm = check.expect(name("ssm_norm"), {h.value_head_dim()}, "[d_v]");
  l.ssm_out = check.expect(name("ssm_out"), {value, dim}, "[ssm.inner_size, dim]");
}

// Full attention of layer i; hybrid models project [q_h | gate_h] per head
// (docs/qwen.md#qwen35-tensors).
void expect_attention(TensorChecker& check, const ModelConfig& c, uint32_t i, LayerWeights& l) {
  const uint64_t dim = c.dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  l.attn_q = c.gated_attention()
                 ? check.expect(name("attn_q"), {dim, 2 * q_dim}, "[dim, 2*n_heads*head_dim]")
                 : check.expect(name("attn_q"), {dim, q_dim}, "[dim, n_heads*head_dim]");
  l.attn_k = check.expect(name("attn_k"), {dim, kv_dim}, "[dim, n_kv_heads*head_dim]");
  l.attn_v = check.expect(name("attn_v"), {dim, kv_dim}, "[dim, n_kv_heads*head_dim]");
  l.attn_output = check.expect(name("attn_output"), {q_dim, dim}, "[n_heads*head_dim, dim]");
  l.attn_q_norm = check.expect(name("attn_q_norm"), {c.head_dim}, "[head_dim]");
  l.attn_k_norm = check.expect(name("attn_k_norm"), {c.head_dim}, "[head_dim]");
}

// The FFN of layer i: dense SwiGLU, or router + experts (+ shared expert) (docs/qwen.md#moe-ffn).
void expect_ffn(TensorChecker& check, const ModelConfig& c, uint32_t i, LayerWeights& l) {
  const uint64_t dim = c.dim;
  const auto name = [&](std::string_view role) { return layer_tensor_name(i, role); };
  if (!c.moe) {
    const uint64_t ffn = c.ffn_dim;
    l.ffn_gate = check.expect(name("ffn_gate"), {dim, ffn}, "[dim, ffn_dim]");
    l.ffn_up = check.expect(name("ffn_up"), {dim, ffn}, "[dim, ffn_dim]");
    l.ffn_down = check.expect(name("ffn_down"), {ffn, dim}, "[ffn_dim, dim]");
    return;
  }
  const uint64_t e = c.moe->n_experts, f = c.moe->expert_ffn_dim, s = c.moe->shared_ffn_dim;
  l.ffn_gate_inp = check.expect(name("ffn_gate_inp"), {dim, e}, "[dim, expert_count]");
  l.ffn_gate_exps = check.expect(name("ffn_gate_exps"), {dim, f, e},
                                 "[dim, expert_feed_forward_length, expert_count]");
  l.ffn_up_exps = check.expect(name("ffn_up_exps"), {dim, f, e},
                               "[dim, expert_feed_forward_length, expert_count]");
  l.ffn_down_exps = check.expect(name("ffn_down_exps"), {f, dim, e},
                                 "[expert_feed_forward_length, dim, expert_count]");
  if (s == 0) return;
  l.ffn_gate_shexp =
      check.expect(name("ffn_gate_shexp"), {dim, s}, "[dim, expert_shared_feed_forward_length]");
  l.ffn_up_shexp =
      check.expect(name("ffn_up_shexp"), {dim, s}, "[dim, expert_shared_feed_forward_length]");
  l.ffn_down_shexp =
      check.expect(name("ffn_down_shexp"), {s, dim}, "[expert_shared_feed_forward_length, dim]");
  l.ffn_gate_inp_shexp = check.expect(name("ffn_gate_inp_shexp"), {dim}, "[dim]");
}

}  // namespace

ModelWeights ModelWeights::from_gguf(const GgufFile& file, const ModelConfig& c) {
  TensorChecker check(file);
  const uint64_t dim = c.dim;
  ModelWeights w;
  w.token_embd = check.expect("token_embd.weight", {dim, c.vocab_size}, "[dim, vocab]");
  w.output_norm = check.expect("output_norm.weight", {dim}, "[dim]");
  w.output = c.tied_output ? w.token_embd
                           : check.expect("output.weight", {dim, c.vocab_size}, "[dim, vocab]");
  w.layers.resize(c.n_layers);
  // qwen35* name the pre-FFN norm post_attention_norm (docs/qwen.md#qwen35-tensors).
  const std::string_view ffn_norm = c.hybrid ? "post_attention_norm" : "ffn_norm";
  for (uint32_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[i];
    l.attn_norm = check.expect(layer_tensor_name(i, "attn_norm"), {dim}, "[dim]");
    if (c.is_recurrent(i)) {
      expect_gdn(check, c, i, l);
    } else {
      expect_attention(check, c, i, l);
    }
    l.ffn_norm = check.expect(layer_tensor_name(i, ffn_norm), {dim}, "[dim]");
    expect_ffn(check, c, i, l);
  }
  const uint32_t n_blocks = c.n_layers + (c.hybrid ? c.hybrid->n_nextn_layers : 0);
  check.check_no_extra(arch_name(c.arch), c.n_layers, n_blocks);
  return w;
}

}  // namespace ugrad::llm
