#include "test/llm/config/model_test_util.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "llm/config/config.h"
#include "llm/gguf/writer.h"

namespace ugrad::llm::test {

TensorSpec& ToyModel::tensor(const std::string& name) {
  for (TensorSpec& t : tensors) {
    if (t.name == name) return t;
  }
  fail("toy model: no tensor '{}'", name);
}

const TensorSpec& ToyModel::tensor(const std::string& name) const {
  return const_cast<ToyModel&>(*this).tensor(name);
}

void ToyModel::remove_tensor(const std::string& name) {
  TensorSpec& t = tensor(name);
  tensors.erase(tensors.begin() + (&t - tensors.data()));
}

GgufFile ToyModel::build() const {
  GgufWriter w;
  for (const auto& [key, value] : metadata) {
    if (const auto* u = std::get_if<uint32_t>(&value)) w.set_u32(key, *u);
    if (const auto* f = std::get_if<float>(&value)) w.set_f32(key, *f);
    if (const auto* s = std::get_if<std::string>(&value)) {
      if (key == "tokenizer.ggml.tokens") {
        // Stored as the token count; the array holds that many placeholder strings.
        const size_t n = std::stoul(*s);
        std::vector<std::string> tokens;
        for (size_t i = 0; i < n; ++i) tokens.push_back(fmt::format("t{}", i));
        w.set_array_strings(key, std::span<const std::string>(tokens));
      } else {
        w.set_string(key, *s);
      }
    }
  }
  for (const TensorSpec& t : tensors) {
    uint64_t n = 1;
    for (uint64_t d : t.dims) n *= d;
    std::vector<uint8_t> bytes(row_bytes(t.type, static_cast<int64_t>(n)), 0);
    if (!t.values.empty()) {
      if (t.type != GgmlType::F32 || t.values.size() != n) {
        fail("toy model: tensor '{}' values do not fit", t.name);
      }
      std::memcpy(bytes.data(), t.values.data(), bytes.size());
    }
    w.add_tensor(t.name, t.dims, t.type, std::move(bytes));
  }
  return GgufFile::from_buffer(w.to_bytes());
}

ToyModel toy_qwen3(uint32_t n_layers, uint32_t dim, uint32_t n_heads, uint32_t n_kv_heads,
                   uint32_t head_dim, uint32_t ffn_dim, uint32_t vocab) {
  ToyModel m;
  m.metadata["general.architecture"] = std::string("qwen3");
  m.metadata["qwen3.block_count"] = n_layers;
  m.metadata["qwen3.context_length"] = uint32_t{256};
  m.metadata["qwen3.embedding_length"] = dim;
  m.metadata["qwen3.feed_forward_length"] = ffn_dim;
  m.metadata["qwen3.attention.head_count"] = n_heads;
  m.metadata["qwen3.attention.head_count_kv"] = n_kv_heads;
  m.metadata["qwen3.attention.key_length"] = head_dim;
  m.metadata["qwen3.attention.value_length"] = head_dim;
  m.metadata["qwen3.rope.freq_base"] = 1000000.0f;
  m.metadata["qwen3.attention.layer_norm_rms_epsilon"] = 1e-6f;
  m.metadata["tokenizer.ggml.tokens"] = std::to_string(vocab);
  m.metadata["tokenizer.ggml.bos_token_id"] = uint32_t{0};
  m.metadata["tokenizer.ggml.eos_token_id"] = vocab - 1;
  const uint64_t q_dim = uint64_t{n_heads} * head_dim, kv_dim = uint64_t{n_kv_heads} * head_dim;
  m.tensors.push_back({"token_embd.weight", {dim, vocab}});
  m.tensors.push_back({"output_norm.weight", {dim}});
  for (uint32_t i = 0; i < n_layers; ++i) {
    const auto name = [&](const char* role) { return fmt::format("blk.{}.{}.weight", i, role); };
    m.tensors.push_back({name("attn_norm"), {dim}});
    m.tensors.push_back({name("attn_q"), {dim, q_dim}});
    m.tensors.push_back({name("attn_k"), {dim, kv_dim}});
    m.tensors.push_back({name("attn_v"), {dim, kv_dim}});
    m.tensors.push_back({name("attn_output"), {q_dim, dim}});
    m.tensors.push_back({name("attn_q_norm"), {head_dim}});
    m.tensors.push_back({name("attn_k_norm"), {head_dim}});
    m.tensors.push_back({name("ffn_norm"), {dim}});
    m.tensors.push_back({name("ffn_gate"), {dim, ffn_dim}});
    m.tensors.push_back({name("ffn_up"), {dim, ffn_dim}});
    m.tensors.push_back({name("ffn_down"), {ffn_dim, dim}});
  }
  return m;
}

ToyModel toy_qwen35(const ToyQwen35Shape& s) {
  ToyModel m;
  const auto key = [](const char* suffix) { return fmt::format("qwen35.{}", suffix); };
  m.metadata["general.architecture"] = std::string("qwen35");
  m.metadata[key("block_count")] = s.n_layers;
  m.metadata[key("context_length")] = uint32_t{256};
  m.metadata[key("embedding_length")] = s.dim;
  m.metadata[key("feed_forward_length")] = s.ffn_dim;
  m.metadata[key("attention.head_count")] = s.n_heads;
  m.metadata[key("attention.head_count_kv")] = s.n_kv_heads;
  m.metadata[key("attention.key_length")] = s.head_dim;
  m.metadata[key("attention.value_length")] = s.head_dim;
  m.metadata[key("rope.dimension_count")] = s.n_rot;
  m.metadata[key("rope.freq_base")] = 1e7f;
  m.metadata[key("attention.layer_norm_rms_epsilon")] = 1e-6f;
  m.metadata[key("full_attention_interval")] = s.interval;
  m.metadata[key("ssm.conv_kernel")] = s.conv_kernel;
  m.metadata[key("ssm.state_size")] = s.key_head_dim;
  m.metadata[key("ssm.group_count")] = s.key_heads;
  m.metadata[key("ssm.time_step_rank")] = s.value_heads;
  m.metadata[key("ssm.inner_size")] = s.value_heads * s.value_head_dim;
  m.metadata["tokenizer.ggml.tokens"] = std::to_string(s.vocab);
  const uint64_t dim = s.dim, q_dim = uint64_t{s.n_heads} * s.head_dim,
                 kv_dim = uint64_t{s.n_kv_heads} * s.head_dim, hv = s.value_heads;
  const uint64_t value_dim = hv * s.value_head_dim;
  const uint64_t conv_dim = 2 * uint64_t{s.key_heads} * s.key_head_dim + value_dim;
  m.tensors.push_back({"token_embd.weight", {dim, s.vocab}});
  m.tensors.push_back({"output_norm.weight", {dim}});
  for (uint32_t i = 0; i < s.n_layers; ++i) {
    const auto name = [&](const char* role) { return fmt::format("blk.{}.{}.weight", i, role); };
    m.tensors.push_back({name("attn_norm"), {dim}});
    if ((i + 1) % s.interval != 0) {
      m.tensors.push_back({name("attn_qkv"), {dim, conv_dim}});
      m.tensors.push_back({name("attn_gate"), {dim, value_dim}});
      m.tensors.push_back({name("ssm_conv1d"), {s.conv_kernel, conv_dim}});
      m.tensors.push_back({fmt::format("blk.{}.ssm_dt.bias", i), {hv}});
      m.tensors.push_back({fmt::format("blk.{}.ssm_a", i), {hv}});
      m.tensors.push_back({name("ssm_beta"), {dim, hv}});
      m.tensors.push_back({name("ssm_alpha"), {dim, hv}});
      m.tensors.push_back({name("ssm_norm"), {s.value_head_dim}});
      m.tensors.push_back({name("ssm_out"), {value_dim, dim}});
    } else {
      m.tensors.push_back({name("attn_q"), {dim, 2 * q_dim}});
      m.tensors.push_back({name("attn_k"), {dim, kv_dim}});
      m.tensors.push_back({name("attn_v"), {dim, kv_dim}});
      m.tensors.push_back({name("attn_output"), {q_dim, dim}});
      m.tensors.push_back({name("attn_q_norm"), {s.head_dim}});
      m.tensors.push_back({name("attn_k_norm"), {s.head_dim}});
    }
    m.tensors.push_back({name("post_attention_norm"), {dim}});
    m.tensors.push_back({name("ffn_gate"), {dim, s.ffn_dim}});
    m.tensors.push_back({name("ffn_up"), {dim, s.ffn_dim}});
    m.tensors.push_back({name("ffn_down"), {s.ffn_dim, dim}});
  }
  return m;
}

void load_config_and_weights(const ToyModel& m) {
  const GgufFile f = m.build();
  const ModelConfig c = ModelConfig::from_gguf(f);
  ModelWeights::from_gguf(f, c);
}

void check_error_cases(const ToyModel& base, const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    INFO(std::string(c.what));
    ToyModel m = base;
    c.edit(m);
    const std::string message = error_of([&] { load_config_and_weights(m); });
    CAPTURE(message);
    REQUIRE_FALSE(message.empty());
    for (const std::string& part : c.expected) CHECK(message.find(part) != std::string::npos);
  }
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path =
        std::filesystem::temp_directory_path() / fmt::format("ugrad_test_llm_config_{}", getpid());
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string temp_path(const std::string& name) {
  static const TempDir dir;
  return (dir.path / name).string();
}

}  // namespace ugrad::llm::test
