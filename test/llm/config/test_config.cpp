// ModelConfig and ModelWeights: reading a qwen3 GGUF and every validation error, each checked to
// name the key or tensor and the offending value.
#include <doctest/doctest.h>

#include <functional>

#include "llm/config/config.h"
#include "test/llm/config/model_test_util.h"

namespace ugrad::llm::test {
namespace {

TEST_CASE("config: a consistent qwen3 file gives every hyperparameter") {
  const GgufFile f = toy_qwen3(/*n_layers=*/3, /*dim=*/8, /*n_heads=*/4, /*n_kv_heads=*/2,
                               /*head_dim=*/6, /*ffn_dim=*/12, /*vocab=*/10)
                         .build();
  const ModelConfig c = ModelConfig::from_gguf(f);
  CHECK(c.arch == ModelArch::kQwen3);
  CHECK(c.n_layers == 3);
  CHECK(c.dim == 8);
  CHECK(c.n_heads == 4);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 6);
  CHECK(c.n_rot == 6);
  CHECK(c.group_size() == 2);
  CHECK(c.q_dim() == 24);  // not dim: q/o projections need not be square (Qwen3-0.6B)
  CHECK(c.kv_dim() == 12);
  CHECK(c.ffn_dim == 12);
  CHECK(c.vocab_size == 10);
  CHECK(c.context_length == 256);
  CHECK(c.rms_eps == doctest::Approx(1e-6));
  CHECK(c.rope_theta == doctest::Approx(1e6));
  CHECK(c.tied_output);
  CHECK(c.bos_id == 0);
  CHECK(c.eos_id == 9);
  CHECK_FALSE(c.eot_id);
  CHECK_FALSE(c.pad_id);
  CHECK_FALSE(c.moe);
  CHECK_FALSE(c.hybrid);

  const ModelWeights w = ModelWeights::from_gguf(f, c);
  REQUIRE(w.layers.size() == 3);
  CHECK(w.token_embd->name == "token_embd.weight");
  CHECK(w.output == w.token_embd);
  CHECK(w.output_norm->name == "output_norm.weight");
  const LayerWeights& l = w.layers[2];
  CHECK(l.attn_norm->name == "blk.2.attn_norm.weight");
  CHECK(l.attn_q->name == "blk.2.attn_q.weight");
  CHECK(l.attn_k->name == "blk.2.attn_k.weight");
  CHECK(l.attn_v->name == "blk.2.attn_v.weight");
  CHECK(l.attn_output->name == "blk.2.attn_output.weight");
  CHECK(l.attn_q_norm->name == "blk.2.attn_q_norm.weight");
  CHECK(l.attn_k_norm->name == "blk.2.attn_k_norm.weight");
  CHECK(l.ffn_norm->name == "blk.2.ffn_norm.weight");
  CHECK(l.ffn_gate->name == "blk.2.ffn_gate.weight");
  CHECK(l.ffn_up->name == "blk.2.ffn_up.weight");
  CHECK(l.ffn_down->name == "blk.2.ffn_down.weight");
}

TEST_CASE("config: output.weight present means untied, and llama.cpp's defaults apply") {
  ToyModel m = toy_qwen3(1, 8, 2, 2, 4, 12, 10);
  m.tensors.push_back({"output.weight", {8, 10}, GgmlType::F16});
  m.metadata.erase("qwen3.attention.head_count_kv");  // defaults to head_count
  m.metadata.erase("qwen3.attention.key_length");     // defaults to dim / head_count
  m.metadata.erase("qwen3.attention.value_length");
  m.metadata.erase("qwen3.rope.freq_base");  // defaults to 10000
  const GgufFile f = m.build();
  const ModelConfig c = ModelConfig::from_gguf(f);
  CHECK_FALSE(c.tied_output);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 4);
  CHECK(c.rope_theta == 10000.0f);
  const ModelWeights w = ModelWeights::from_gguf(f, c);
  CHECK(w.output->name == "output.weight");
  CHECK(w.output->type == GgmlType::F16);
}

TEST_CASE("config: arch names round-trip") {
  for (ModelArch a :
       {ModelArch::kQwen3, ModelArch::kQwen3Moe, ModelArch::kQwen35, ModelArch::kQwen35Moe}) {
    CHECK(parse_arch(arch_name(a)) == a);
  }
  CHECK_FALSE(parse_arch("llama"));
}

TEST_CASE("config: every inconsistency is an Error naming the key or tensor and the value") {
  const std::vector<ErrorCase> cases = {
      {"architecture missing",
       [](ToyModel& m) { m.metadata.erase("general.architecture"); },
       {"general.architecture", "missing"}},
      {"unknown architecture",
       [](ToyModel& m) { m.metadata["general.architecture"] = std::string("llama"); },
       {"general.architecture", "'llama'", "not a known architecture"}},
      {"another known architecture reads its own keys",
       [](ToyModel& m) { m.metadata["general.architecture"] = std::string("qwen35"); },
       {"qwen35.block_count", "missing"}},
      {"architecture of the wrong type",
       [](ToyModel& m) { m.metadata["general.architecture"] = uint32_t{3}; },
       {"general.architecture"}},
      {"block_count missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.block_count"); },
       {"qwen3.block_count", "missing"}},
      {"block_count zero",
       [](ToyModel& m) { m.metadata["qwen3.block_count"] = uint32_t{0}; },
       {"qwen3.block_count", "= 0"}},
      {"block_count of the wrong type",
       [](ToyModel& m) { m.metadata["qwen3.block_count"] = std::string("two"); },
       {"qwen3.block_count"}},
      {"embedding_length missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.embedding_length"); },
       {"qwen3.embedding_length", "missing"}},
      {"feed_forward_length missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.feed_forward_length"); },
       {"qwen3.feed_forward_length", "missing"}},
      {"context_length missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.context_length"); },
       {"qwen3.context_length", "missing"}},
      {"head_count missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.attention.head_count"); },
       {"qwen3.attention.head_count", "missing"}},
      {"head_count not a multiple of head_count_kv",
       [](ToyModel& m) { m.metadata["qwen3.attention.head_count_kv"] = uint32_t{3}; },
       {"qwen3.attention.head_count' = 2", "not a multiple", "head_count_kv' = 3"}},
      {"head_count_kv zero",
       [](ToyModel& m) { m.metadata["qwen3.attention.head_count_kv"] = uint32_t{0}; },
       {"qwen3.attention.head_count_kv", "= 0"}},
      {"value_length differs from key_length",
       [](ToyModel& m) { m.metadata["qwen3.attention.value_length"] = uint32_t{8}; },
       {"qwen3.attention.value_length' = 8", "key_length' = 4"}},
      {"odd head size",
       [](ToyModel& m) {
         m.metadata["qwen3.attention.key_length"] = uint32_t{3};
         m.metadata["qwen3.attention.value_length"] = uint32_t{3};
       },
       {"qwen3.attention.key_length' = 3", "even"}},
      {"key_length absent and dim not a multiple of heads",
       [](ToyModel& m) {
         m.metadata.erase("qwen3.attention.key_length");
         m.metadata["qwen3.attention.head_count"] = uint32_t{3};
         m.metadata["qwen3.attention.head_count_kv"] = uint32_t{3};
       },
       {"qwen3.attention.key_length", "missing", "embedding_length 8", "head_count 3"}},
      {"partial rotary",
       [](ToyModel& m) { m.metadata["qwen3.rope.dimension_count"] = uint32_t{2}; },
       {"qwen3.rope.dimension_count' = 2", "key_length' = 4"}},
      {"rms eps missing",
       [](ToyModel& m) { m.metadata.erase("qwen3.attention.layer_norm_rms_epsilon"); },
       {"qwen3.attention.layer_norm_rms_epsilon", "missing"}},
      {"rms eps negative",
       [](ToyModel& m) { m.metadata["qwen3.attention.layer_norm_rms_epsilon"] = -1.0f; },
       {"qwen3.attention.layer_norm_rms_epsilon' = -1", "positive"}},
      {"rope theta zero",
       [](ToyModel& m) { m.metadata["qwen3.rope.freq_base"] = 0.0f; },
       {"qwen3.rope.freq_base' = 0", "positive"}},
      {"rope scaling",
       [](ToyModel& m) { m.metadata["qwen3.rope.scaling.type"] = std::string("yarn"); },
       {"qwen3.rope.scaling.type", "'yarn'", "not supported"}},
      {"token count disagrees with token_embd",
       [](ToyModel& m) { m.metadata["tokenizer.ggml.tokens"] = std::string("11"); },
       {"tokenizer.ggml.tokens", "11 tokens", "10 rows"}},
      {"vocab_size key disagrees",
       [](ToyModel& m) { m.metadata["qwen3.vocab_size"] = 12u; },
       {"qwen3.vocab_size' = 12", "10 rows"}},
      {"bos id outside the vocabulary",
       [](ToyModel& m) { m.metadata["tokenizer.ggml.bos_token_id"] = uint32_t{10}; },
       {"tokenizer.ggml.bos_token_id' = 10", "outside the vocabulary"}},
      {"eot id outside the vocabulary",
       [](ToyModel& m) { m.metadata["tokenizer.ggml.eot_token_id"] = uint32_t{99}; },
       {"tokenizer.ggml.eot_token_id' = 99"}},
      {"token_embd missing",
       [](ToyModel& m) { m.remove_tensor("token_embd.weight"); },
       {"token_embd.weight"}},
      {"token_embd not 2-D",
       [](ToyModel& m) { m.tensor("token_embd.weight").dims = {80}; },
       {"token_embd.weight", "[80]"}},
      {"layer tensor missing",
       [](ToyModel& m) { m.remove_tensor("blk.1.ffn_up.weight"); },
       {"blk.1.ffn_up.weight", "missing", "[dim, ffn_dim] = [8, 12]"}},
      {"layer past block_count missing",
       [](ToyModel& m) { m.metadata["qwen3.block_count"] = uint32_t{3}; },
       {"blk.2.attn_norm.weight", "missing"}},
      {"k projection with the wrong width",
       [](ToyModel& m) {
         m.tensor("blk.0.attn_k.weight").dims = {8, 8};
       },
       {"blk.0.attn_k.weight", "[8, 8]", "[dim, n_kv_heads*head_dim] = [8, 4]"}},
      {"output projection transposed",
       [](ToyModel& m) {
         m.tensor("blk.1.attn_output.weight").dims = {8, 4};
       },
       {"blk.1.attn_output.weight", "[n_heads*head_dim, dim]"}},
      {"q norm of the wrong size",
       [](ToyModel& m) { m.tensor("blk.0.attn_q_norm.weight").dims = {8}; },
       {"blk.0.attn_q_norm.weight", "[8]", "[head_dim] = [4]"}},
      {"ffn_down transposed",
       [](ToyModel& m) {
         m.tensor("blk.0.ffn_down.weight").dims = {8, 12};
       },
       {"blk.0.ffn_down.weight", "[8, 12]", "[12, 8]"}},
      {"untied output of the wrong vocab",
       [](ToyModel& m) {
         m.tensors.push_back({"output.weight", {8, 9}});
       },
       {"output.weight", "[8, 9]", "[dim, vocab] = [8, 10]"}},
      {"output_norm missing",
       [](ToyModel& m) { m.remove_tensor("output_norm.weight"); },
       {"output_norm.weight", "missing"}},
      {"a type ugrad cannot dequantize",
       [](ToyModel& m) { m.tensor("blk.1.attn_q.weight").type = GgmlType::I32; },
       {"blk.1.attn_q.weight", "I32", "cannot dequantize"}},
      {"a tensor the architecture does not use",
       [](ToyModel& m) {
         m.tensors.push_back({"blk.0.attn_qkv.weight", {8, 16}});
       },
       {"blk.0.attn_qkv.weight", "[8, 16]", "not part of a qwen3 model"}},
      {"a layer past block_count",
       [](ToyModel& m) { m.metadata["qwen3.block_count"] = uint32_t{1}; },
       {"blk.1.", "not part of a qwen3 model"}},
  };
  check_error_cases(toy_qwen3(), cases);
}

}  // namespace
}  // namespace ugrad::llm::test
