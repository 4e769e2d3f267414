// The demo-model writer: written files read back with the config they were asked for, in every
// weight type, with llama.cpp's qwen3 metadata, seeded weights and a usable vocabulary.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "base/error.h"
#include "llm/config/config.h"
#include "llm/config/demo_model.h"
#include "llm/quant/dequantize.h"
#include "llm/tokenizer/bpe.h"
#include "test/llm/config/model_test_util.h"

namespace ugrad::llm::test {
namespace {

// Smallest shapes that every type's block size divides (256 for the K and IQ4_XS formats).
DemoModelOptions options_for(GgmlType type) {
  DemoModelOptions o;
  o.weight_type = type;
  o.seed = 7;
  if (format_of(type).block_size > 32) {
    o.dim = 256;
    o.n_heads = 4;
    o.n_kv_heads = 2;
    o.head_dim = 64;
    o.ffn_dim = 256;
  } else {
    o.dim = 64;
    o.n_heads = 4;
    o.n_kv_heads = 1;
    o.head_dim = 8;
    o.ffn_dim = 96;
  }
  return o;
}

std::vector<float> values_of(const GgufTensor& t) {
  std::vector<float> out(t.n_elements());
  dequantize(t.type, t.data, out);
  return out;
}

const GgmlType kTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::Q8_0,  GgmlType::Q2_K,
                           GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::IQ4_XS};

TEST_CASE("demo model: round trip through a file in every weight type") {
  for (GgmlType type : kTypes) {
    INFO(format_of(type).name);
    DemoModelOptions o = options_for(type);
    o.n_layers = 2;
    o.context_length = 1024;
    o.rope_theta = 5e5f;
    o.tied_output = type != GgmlType::Q8_0;  // one untied case
    const std::string path = temp_path(fmt::format("demo_{}.gguf", format_of(type).name));
    write_demo_model(path, o);
    const GgufFile f = GgufFile::open(path);

    const ModelConfig c = ModelConfig::from_gguf(f);
    CHECK(c.n_layers == o.n_layers);
    CHECK(c.dim == o.dim);
    CHECK(c.n_heads == o.n_heads);
    CHECK(c.n_kv_heads == o.n_kv_heads);
    CHECK(c.head_dim == o.head_dim);
    CHECK(c.ffn_dim == o.ffn_dim);
    CHECK(c.context_length == 1024);
    CHECK(c.rope_theta == 5e5f);
    CHECK(c.rms_eps == o.rms_eps);
    CHECK(c.tied_output == o.tied_output);
    const VocabData vocab = synthetic_vocab();
    CHECK(c.vocab_size == vocab.tokens.size());
    CHECK(c.bos_id == vocab.bos_id);
    CHECK(c.eos_id == vocab.eos_id);
    CHECK(c.eot_id == vocab.eot_id);
    CHECK(c.pad_id == vocab.pad_id);

    const ModelWeights w = ModelWeights::from_gguf(f, c);
    for (const GgufTensor& t : f.tensors()) {
      INFO(t.name);
      const bool is_norm = t.dims.size() == 1;
      CHECK(t.type == (is_norm ? GgmlType::F32 : type));
    }
    CHECK(w.layers[1].attn_output->dims ==
          std::vector<uint64_t>{uint64_t{o.n_heads} * o.head_dim, o.dim});
    CHECK(f.get_string("general.architecture") == "qwen3");
    CHECK(f.get_string("general.name").find("random weights") != std::string_view::npos);
    CHECK(f.get_string("general.description").find("meaningless output") != std::string_view::npos);
    CHECK(f.get_u32("general.quantization_version") == 2);
    CHECK(f.has("general.file_type"));
    CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
    CHECK(f.get_string("tokenizer.ggml.pre") == "qwen2");
    CHECK(f.get_array_strings("tokenizer.ggml.merges").size() == vocab.merges.size());
    CHECK(f.get_array_i32("tokenizer.ggml.token_type") == vocab.token_types);
    CHECK_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));
    CHECK_FALSE(f.has("tokenizer.chat_template"));
  }
}

TEST_CASE("demo model: quantized weights are the seeded F32 weights, quantized") {
  // Same seed and shapes: every type decodes to roughly the F32 model's values.
  const DemoModelOptions base = options_for(GgmlType::Q4_K);
  DemoModelOptions f32 = base;
  f32.weight_type = GgmlType::F32;
  const GgufFile ref = GgufFile::from_buffer(build_demo_model(f32).to_bytes());
  const std::vector<float> expected = values_of(ref.tensor("blk.1.ffn_down.weight"));
  double sum_sq = 0;
  for (float v : expected) sum_sq += double(v) * v;
  const double rms = std::sqrt(sum_sq / double(expected.size()));
  CHECK(rms == doctest::Approx(1.0 / std::sqrt(double(base.ffn_dim))).epsilon(0.05));
  // Relative RMS error each format reaches on normal data, with margin.
  const std::pair<GgmlType, double> tolerances[] = {
      {GgmlType::F16, 1e-3}, {GgmlType::Q8_0, 0.01}, {GgmlType::Q2_K, 0.35},
      {GgmlType::Q3_K, 0.2}, {GgmlType::Q4_K, 0.15}, {GgmlType::IQ4_XS, 0.15}};
  for (const auto& tc : tolerances) {
    const GgmlType type = tc.first;  // (clang 14 lambdas, here INFO, cannot capture bindings)
    const double tolerance = tc.second;
    INFO(format_of(type).name);
    DemoModelOptions o = base;
    o.weight_type = type;
    const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
    const std::vector<float> got = values_of(f.tensor("blk.1.ffn_down.weight"));
    REQUIRE(got.size() == expected.size());
    double err_sq = 0;
    for (size_t i = 0; i < got.size(); ++i) err_sq += std::pow(double(got[i]) - expected[i], 2);
    CHECK(std::sqrt(err_sq / double(got.size())) / rms < tolerance);
    // Norms stay F32, bit-equal to the F32 model's.
    CHECK(values_of(f.tensor("blk.0.attn_q_norm.weight")) ==
          values_of(ref.tensor("blk.0.attn_q_norm.weight")));
  }
}

TEST_CASE("demo model: a preset's mixture, and layers standing for others of a larger model") {
  DemoModelOptions o;
  o.dim = 256;
  o.n_heads = 4;
  o.n_kv_heads = 2;
  o.head_dim = 64;
  o.ffn_dim = 256;
  o.n_layers = 4;
  o.preset = "Q4_K_M";  // value projection and ffn_down Q6_K in layers 2 and 3 of 4
  const auto type_of = [](const DemoModelOptions& opts, const std::string& name) {
    const GgufFile f = GgufFile::from_buffer(build_demo_model(opts).to_bytes());
    return std::string(format_of(f.tensor(name).type).name);
  };
  const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
  CHECK(type_of(o, "blk.1.attn_v.weight") == "Q4_K");
  CHECK(type_of(o, "blk.2.attn_v.weight") == "Q6_K");
  CHECK(type_of(o, "blk.3.ffn_down.weight") == "Q6_K");
  CHECK(type_of(o, "blk.3.ffn_up.weight") == "Q4_K");
  CHECK(type_of(o, "token_embd.weight") == "Q6_K");  // the tied head
  CHECK(type_of(o, "blk.0.attn_norm.weight") == "F32");
  CHECK(f.get_u32("general.file_type") == 15u);
  // Two layers standing for layers 0 and 4 of a 36-block model: Q6_K, then Q4_K.
  o.n_layers = 2;
  o.preset_blocks = 36;
  o.preset_layers = {0, 4};
  CHECK(type_of(o, "blk.0.attn_v.weight") == "Q6_K");
  CHECK(type_of(o, "blk.1.attn_v.weight") == "Q4_K");
  o.preset_layers = {0};
  CHECK_THROWS_WITH_AS(build_demo_model(o), doctest::Contains("preset_layers has 1 entries"),
                       ugrad::Error);
  o.preset = "Q9_K";
  CHECK_THROWS_WITH_AS(build_demo_model(o), doctest::Contains("unknown quantization preset"),
                       ugrad::Error);
}

TEST_CASE("demo model: the seed decides the weights") {
  DemoModelOptions o = options_for(GgmlType::Q8_0);
  const std::vector<uint8_t> a = build_demo_model(o).to_bytes();
  CHECK(build_demo_model(o).to_bytes() == a);
  o.seed += 1;
  CHECK(build_demo_model(o).to_bytes() != a);
  // Norm weights are 1 +- 0.1ish, not all exactly 1 (a skipped norm would go unnoticed).
  const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
  const std::vector<float> norm = values_of(f.tensor("output_norm.weight"));
  double sum = 0;
  bool all_one = true;
  for (float v : norm) {
    sum += v;
    all_one = all_one && v == 1.0f;
    CHECK(std::abs(v - 1.0f) < 0.6f);
  }
  CHECK_FALSE(all_one);
  CHECK(sum / double(norm.size()) == doctest::Approx(1.0).epsilon(0.05));
}

TEST_CASE("demo model: padded vocabulary and chat template") {
  DemoModelOptions o = options_for(GgmlType::F32);
  const size_t n_tokens = synthetic_vocab().tokens.size();
  o.vocab_size = static_cast<uint32_t>(n_tokens + 5);
  o.chat_template = "{{ messages }}";
  const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
  CHECK(ModelConfig::from_gguf(f).vocab_size == n_tokens + 5);
  const auto tokens = f.get_array_strings("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == n_tokens + 5);
  CHECK(tokens.back() == fmt::format("[PAD{}]", n_tokens + 4));
  CHECK(f.get_array_i32("tokenizer.ggml.token_type").back() == 5);  // UNUSED
  CHECK(f.get_string("tokenizer.chat_template") == "{{ messages }}");
}

TEST_CASE("demo model: the synthetic vocabulary tokenizes") {
  const VocabData v = synthetic_vocab();
  const BpeTokenizer tok(v);
  const auto id = [&](std::string_view text) { return tok.token_id(text).value(); };
  CHECK(tok.encode("hello world") == std::vector<TokenId>{id("hello"), id("Ġworld")});
  CHECK(tok.encode("<|im_start|>user\n<think>") == std::vector<TokenId>{id("<|im_start|>"), id("u"),
                                                                        id("s"), id("e"), id("r"),
                                                                        id("Ċ"), id("<think>")});
  const std::string text = "any bytes: é, ✓, \x01, emoji 🙂";
  CHECK(tok.decode(tok.encode(text)) == text);
  CHECK(tok.is_end_of_generation(*v.eos_id));
  CHECK(v.tokens[*v.bos_id] == "<|endoftext|>");
  CHECK(v.tokens[*v.eos_id] == "<|im_end|>");
}

TEST_CASE("demo model: vocabulary text files") {
  const std::string path = temp_path("vocab.txt");
  {
    std::ofstream out(path);
    // "a", "b", "ab" and one merge "a b" (hex of UTF-8).
    out << "pre qwen2\nbos 2\neos 2\neot 2\npad 2\ntokens 3\n1 61\n1 62\n3 6162\nmerges 1\n"
           "612062\n";
  }
  const VocabData v = read_vocab_text(path);
  CHECK(v.pre == "qwen2");
  CHECK(v.tokens == std::vector<std::string>{"a", "b", "ab"});
  CHECK(v.token_types == std::vector<int32_t>{1, 1, 3});
  CHECK(v.merges == std::vector<std::string>{"a b"});
  CHECK(v.bos_id == 2);
  {
    std::ofstream out(path);
    out << "pre qwen2\nbos 2\neos 2\neot 2\npad 2\ntokens 3\n1 61\n1 6x\n";
  }
  const std::string bad_hex = error_of([&] { read_vocab_text(path); });
  CHECK(bad_hex.find(path) != std::string::npos);
  CHECK(bad_hex.find("line 8") != std::string::npos);
  {
    std::ofstream out(path);
    out << "pre qwen2\nbos 2\neos 2\neot 2\npad 2\ntokens 3\n1 61\n";
  }
  CHECK(error_of([&] { read_vocab_text(path); }).find("end of file") != std::string::npos);
  CHECK(error_of([&] { read_vocab_text(temp_path("absent.txt")); }).find("cannot open") !=
        std::string::npos);
}

TEST_CASE("demo model: bad options are Errors naming the option") {
  const auto message = [](auto edit) {
    DemoModelOptions o;
    edit(o);
    return error_of([&] { build_demo_model(o); });
  };
  CHECK(message([](DemoModelOptions& o) { o.weight_type = GgmlType::Q4_K; })
            .find("dim (input of attn_q/k/v, ffn_gate/up, rows of token_embd) = 64 is not a "
                  "multiple of Q4_K's block size 256") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) {
          o.weight_type = GgmlType::Q8_0;
          o.head_dim = 6;
        }).find("n_heads*head_dim") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) {
          o.n_kv_heads = 3;
        }).find("n_heads = 4 is not a multiple of n_kv_heads = 3") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) { o.n_layers = 0; }).find("n_layers") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) { o.head_dim = 5; }).find("head_dim = 5") !=
        std::string::npos);
  CHECK(message([](DemoModelOptions& o) { o.vocab_size = 10; }).find("vocab_size = 10") !=
        std::string::npos);
  CHECK(message([](DemoModelOptions& o) {
          o.weight_type = GgmlType::I32;
        }).find("I32 cannot be written") != std::string::npos);
}

}  // namespace
}  // namespace ugrad::llm::test
