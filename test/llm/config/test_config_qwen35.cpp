// ModelConfig and ModelWeights for the hybrid and MoE architectures (qwen35, qwen35moe, qwen3moe):
// the layer pattern, the MTP tail, the Gated DeltaNet and MoE sections, and every validation
// error, each checked to name the key or tensor and the offending value.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cstring>
#include <functional>

#include "llm/config/config.h"
#include "llm/config/demo_model.h"
#include "test/llm/config/model_test_util.h"

namespace ugrad::llm::test {
namespace {

TEST_CASE("config qwen35: hybrid sizes, layer pattern and tensor roles") {
  const GgufFile f = toy_qwen35().build();
  const ModelConfig c = ModelConfig::from_gguf(f);
  CHECK(c.arch == ModelArch::kQwen35);
  CHECK(c.n_layers == 4);
  CHECK(c.head_dim == 4);
  CHECK(c.n_rot == 2);  // partial rotary
  CHECK(c.ffn_dim == 12);
  CHECK(c.rope_theta == doctest::Approx(1e7));
  CHECK(c.gated_attention());
  CHECK_FALSE(c.moe);
  REQUIRE(c.hybrid);
  const HybridConfig& h = *c.hybrid;
  CHECK(h.full_attention_interval == 2);
  CHECK(h.conv_kernel == 3);
  CHECK(h.n_key_heads == 1);
  CHECK(h.n_value_heads == 2);
  CHECK(h.key_head_dim == 4);
  CHECK(h.value_head_dim() == 3);
  CHECK(h.key_dim() == 4);
  CHECK(h.conv_dim() == 2 * 4 + 6);
  CHECK(h.n_nextn_layers == 0);
  CHECK(h.recurrent == std::vector<bool>{true, false, true, false});
  CHECK(c.is_recurrent(0));
  CHECK_FALSE(c.is_recurrent(1));

  const ModelWeights w = ModelWeights::from_gguf(f, c);
  REQUIRE(w.layers.size() == 4);
  const LayerWeights& gdn = w.layers[2];
  CHECK(gdn.attn_qkv->name == "blk.2.attn_qkv.weight");
  CHECK(gdn.attn_gate->name == "blk.2.attn_gate.weight");
  CHECK(gdn.ssm_conv1d->dims == std::vector<uint64_t>{3, 14});
  CHECK(gdn.ssm_dt->name == "blk.2.ssm_dt.bias");
  CHECK(gdn.ssm_a->name == "blk.2.ssm_a");
  CHECK(gdn.ssm_beta->name == "blk.2.ssm_beta.weight");
  CHECK(gdn.ssm_alpha->name == "blk.2.ssm_alpha.weight");
  CHECK(gdn.ssm_norm->dims == std::vector<uint64_t>{3});
  CHECK(gdn.ssm_out->dims == std::vector<uint64_t>{6, 8});
  CHECK(gdn.ffn_norm->name == "blk.2.post_attention_norm.weight");
  CHECK(gdn.attn_q == nullptr);
  CHECK(gdn.ffn_gate_inp == nullptr);
  const LayerWeights& attn = w.layers[3];
  CHECK(attn.attn_q->dims == std::vector<uint64_t>{8, 2 * 2 * 4});  // [q_h | gate_h] per head
  CHECK(attn.attn_output->dims == std::vector<uint64_t>{8, 8});
  CHECK(attn.attn_qkv == nullptr);
  CHECK(attn.ffn_down->name == "blk.3.ffn_down.weight");
}

TEST_CASE("config qwen35: MTP tail layers are skipped, the interval defaults to 4") {
  ToyQwen35Shape shape;
  shape.n_layers = 5;
  shape.interval = 4;
  ToyModel m = toy_qwen35(shape);
  m.metadata.erase("qwen35.full_attention_interval");
  m.metadata["qwen35.nextn_predict_layers"] = uint32_t{1};
  m.tensors.push_back({"blk.4.nextn.eh_proj.weight", {16, 8}});  // 5th block is the MTP block
  const GgufFile f = m.build();
  const ModelConfig c = ModelConfig::from_gguf(f);
  CHECK(c.n_layers == 4);
  CHECK(c.hybrid->n_nextn_layers == 1);
  CHECK(c.hybrid->recurrent == std::vector<bool>{true, true, true, false});
  CHECK(ModelWeights::from_gguf(f, c).layers.size() == 4);
}

TEST_CASE("config qwen35: attention.recurrent_layers overrides the interval") {
  ToyQwen35Shape shape;
  shape.interval = 2;
  ToyModel m = toy_qwen35(shape);
  GgufWriter w;  // ToyModel has no array values; patch the built file's metadata instead
  const GgufFile base = m.build();
  for (const GgufKV& kv : base.metadata()) w.set(kv.key, kv.value);
  const std::array<bool, 4> flags = {true, false, true, false};  // same pattern as interval 2
  w.set_array("qwen35.attention.recurrent_layers", std::span<const bool>(flags));
  w.set_u32("qwen35.full_attention_interval", 3);  // would disagree if it were used
  for (const GgufTensor& t : base.tensors()) {
    w.add_tensor(std::string(t.name), t.dims, t.type,
                 std::vector<uint8_t>(t.data.begin(), t.data.end()));
  }
  const GgufFile f = GgufFile::from_buffer(w.to_bytes());
  const ModelConfig c = ModelConfig::from_gguf(f);
  CHECK(c.hybrid->recurrent == std::vector<bool>{true, false, true, false});
  CHECK(ModelWeights::from_gguf(f, c).layers.size() == 4);
}

TEST_CASE("config: demo models of every architecture read back") {
  for (ModelArch arch :
       {ModelArch::kQwen3, ModelArch::kQwen3Moe, ModelArch::kQwen35, ModelArch::kQwen35Moe}) {
    INFO(arch_name(arch));
    DemoModelOptions o;
    o.arch = arch;
    o.n_layers = 4;
    o.full_attention_interval = 2;
    o.nextn_layers = 1;
    o.ssm_key_heads = 2;
    o.ssm_value_heads = 6;
    o.ssm_value_head_dim = 8;
    o.n_experts = 6;
    o.n_experts_used = 3;
    o.expert_ffn_dim = 32;
    o.shared_ffn_dim = 64;
    const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
    const ModelConfig c = ModelConfig::from_gguf(f);
    const ModelWeights w = ModelWeights::from_gguf(f, c);
    CHECK(c.arch == arch);
    CHECK(c.n_layers == 4);
    const bool hybrid = arch == ModelArch::kQwen35 || arch == ModelArch::kQwen35Moe;
    const bool moe = arch == ModelArch::kQwen3Moe || arch == ModelArch::kQwen35Moe;
    CHECK(c.hybrid.has_value() == hybrid);
    CHECK(c.moe.has_value() == moe);
    CHECK(c.n_rot == (hybrid ? 4 : 16));
    if (hybrid) {
      CHECK(f.get_u32(fmt::format("{}.block_count", arch_name(arch))) == 5);
      CHECK(c.hybrid->n_nextn_layers == 1);
      CHECK(c.hybrid->n_value_heads == 6);
      CHECK(c.hybrid->n_key_heads == 2);
      CHECK(c.hybrid->value_head_dim() == 8);
      CHECK(c.hybrid->recurrent == std::vector<bool>{true, false, true, false});
      CHECK(w.layers[0].ssm_out != nullptr);
      // ssm_a is -exp(A_log): every entry negative.
      std::vector<float> a(6);
      std::memcpy(a.data(), w.layers[0].ssm_a->data.data(), a.size() * sizeof(float));
      for (float v : a) CHECK(v < 0.0f);
    }
    if (moe) {
      CHECK(c.moe->n_experts == 6);
      CHECK(c.moe->n_experts_used == 3);
      CHECK(c.moe->expert_ffn_dim == 32);
      CHECK(c.moe->shared_ffn_dim == (arch == ModelArch::kQwen35Moe ? 64 : 0));
      CHECK(w.layers[1].ffn_down_exps->dims == std::vector<uint64_t>{32, 64, 6});
      CHECK((w.layers[1].ffn_gate_inp_shexp != nullptr) == (arch == ModelArch::kQwen35Moe));
      CHECK(w.layers[1].ffn_gate == nullptr);
    }
  }
}

TEST_CASE("config qwen35: every inconsistency is an Error naming the key or tensor and value") {
  const std::vector<ErrorCase> cases = {
      {"conv kernel missing",
       [](ToyModel& m) { m.metadata.erase("qwen35.ssm.conv_kernel"); },
       {"qwen35.ssm.conv_kernel", "missing"}},
      {"state size zero",
       [](ToyModel& m) { m.metadata["qwen35.ssm.state_size"] = uint32_t{0}; },
       {"qwen35.ssm.state_size", "= 0"}},
      {"value heads not a multiple of key heads",
       [](ToyModel& m) {
         m.metadata["qwen35.ssm.group_count"] = uint32_t{2};
         m.metadata["qwen35.ssm.time_step_rank"] = uint32_t{3};
         m.metadata["qwen35.ssm.inner_size"] = uint32_t{9};
       },
       {"qwen35.ssm.time_step_rank' = 3", "not a multiple", "qwen35.ssm.group_count' = 2"}},
      {"inner size not a multiple of value heads",
       [](ToyModel& m) { m.metadata["qwen35.ssm.inner_size"] = uint32_t{7}; },
       {"qwen35.ssm.inner_size' = 7", "qwen35.ssm.time_step_rank' = 2"}},
      {"odd rotary dims",
       [](ToyModel& m) { m.metadata["qwen35.rope.dimension_count"] = uint32_t{3}; },
       {"qwen35.rope.dimension_count' = 3", "even"}},
      {"rotary dims beyond the head",
       [](ToyModel& m) { m.metadata["qwen35.rope.dimension_count"] = uint32_t{6}; },
       {"qwen35.rope.dimension_count' = 6", "key_length' = 4"}},
      {"MTP layers take every block",
       [](ToyModel& m) { m.metadata["qwen35.nextn_predict_layers"] = uint32_t{4}; },
       {"qwen35.nextn_predict_layers' = 4", "qwen35.block_count' = 4"}},
      {"interval zero",
       [](ToyModel& m) { m.metadata["qwen35.full_attention_interval"] = uint32_t{0}; },
       {"qwen35.full_attention_interval", "= 0"}},
      {"ssm_a missing",
       [](ToyModel& m) { m.remove_tensor("blk.2.ssm_a"); },
       {"blk.2.ssm_a", "missing", "[ssm.time_step_rank] = [2]"}},
      {"dt bias missing",
       [](ToyModel& m) { m.remove_tensor("blk.0.ssm_dt.bias"); },
       {"blk.0.ssm_dt.bias", "missing"}},
      {"conv taps transposed",
       [](ToyModel& m) {
         m.tensor("blk.0.ssm_conv1d.weight").dims = {14, 3};
       },
       {"blk.0.ssm_conv1d.weight", "[14, 3]", "[ssm.conv_kernel, conv_dim] = [3, 14]"}},
      {"qkv of the wrong width",
       [](ToyModel& m) {
         m.tensor("blk.0.attn_qkv.weight").dims = {8, 12};
       },
       {"blk.0.attn_qkv.weight", "[8, 12]", "[8, 14]"}},
      {"gated norm over the wrong size",
       [](ToyModel& m) { m.tensor("blk.2.ssm_norm.weight").dims = {6}; },
       {"blk.2.ssm_norm.weight", "[6]", "[d_v] = [3]"}},
      {"full attention without the gate half",
       [](ToyModel& m) {
         m.tensor("blk.1.attn_q.weight").dims = {8, 8};
       },
       {"blk.1.attn_q.weight", "[8, 8]", "[dim, 2*n_heads*head_dim] = [8, 16]"}},
      {"qwen3's ffn_norm name",
       [](ToyModel& m) {
         m.tensor("blk.3.post_attention_norm.weight").name = "blk.3.ffn_norm.weight";
       },
       {"blk.3.post_attention_norm.weight", "missing"}},
      {"a full-attention tensor in a Gated DeltaNet layer",
       [](ToyModel& m) {
         m.tensors.push_back({"blk.0.attn_q.weight", {8, 16}});
       },
       {"blk.0.attn_q.weight", "not part of a qwen35 model"}},
      {"a block past block_count without nextn_predict_layers",
       [](ToyModel& m) {
         m.tensors.push_back({"blk.4.nextn.eh_proj.weight", {16, 8}});
       },
       {"blk.4.nextn.eh_proj.weight", "not part of a qwen35 model"}},
      {"qwen35moe without expert keys",
       [](ToyModel& m) { m.metadata["general.architecture"] = std::string("qwen35moe"); },
       {"qwen35moe.block_count", "missing"}},
  };
  check_error_cases(toy_qwen35(), cases);
  // The unedited toy loads.
  CHECK(error_of([] { load_config_and_weights(toy_qwen35()); }).empty());
}

TEST_CASE("config qwen35moe: expert counts are checked") {
  DemoModelOptions o;
  o.arch = ModelArch::kQwen35Moe;
  GgufWriter w = build_demo_model(o);
  w.set_u32("qwen35moe.expert_used_count", 9);
  const GgufFile f = GgufFile::from_buffer(w.to_bytes());
  const std::string message = error_of([&] { ModelConfig::from_gguf(f); });
  CHECK(message.find("qwen35moe.expert_used_count' = 9") != std::string::npos);
  CHECK(message.find("qwen35moe.expert_count' = 8") != std::string::npos);
  GgufWriter no_shared = build_demo_model(o);
  no_shared.set_u32("qwen35moe.expert_count", 0);
  CHECK(error_of([&] {
          ModelConfig::from_gguf(GgufFile::from_buffer(no_shared.to_bytes()));
        }).find("qwen35moe.expert_count' = 0") != std::string::npos);
}

TEST_CASE("demo qwen35: matrices take the weight type, conv, dt, ssm_a, norms, router stay F32") {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K}) {
    INFO(format_of(type).name);
    DemoModelOptions o;
    o.arch = ModelArch::kQwen35Moe;
    o.weight_type = type;
    o.n_layers = 2;
    o.full_attention_interval = 2;
    if (format_of(type).block_size > 32) {
      o.dim = o.ffn_dim = o.expert_ffn_dim = o.shared_ffn_dim = 256;
      o.head_dim = 64;
      o.ssm_value_head_dim = 64;
    }
    const GgufFile f = GgufFile::from_buffer(build_demo_model(o).to_bytes());
    const ModelConfig c = ModelConfig::from_gguf(f);
    ModelWeights::from_gguf(f, c);
    for (const GgufTensor& t : f.tensors()) {
      INFO(t.name);
      const bool stays_f32 = t.dims.size() == 1 || t.name.find("ssm_conv1d") != std::string::npos ||
                             t.name.find("ffn_gate_inp.") != std::string::npos;
      CHECK(t.type == (stays_f32 ? GgmlType::F32 : type));
    }
    CHECK(f.get_string("general.name").find("qwen35moe") != std::string_view::npos);
    CHECK(f.get_string("general.description").find("meaningless output") != std::string_view::npos);
    CHECK(f.get_array_i32("qwen35moe.rope.dimension_sections").size() == 4);
  }
}

TEST_CASE("demo qwen35: bad hybrid options are Errors naming the option") {
  const auto message = [](auto edit) {
    DemoModelOptions o;
    o.arch = ModelArch::kQwen35;
    edit(o);
    return error_of([&] { build_demo_model(o); });
  };
  CHECK(message([](DemoModelOptions& o) {
          o.ssm_value_heads = 3;
        }).find("ssm_value_heads = 3 is not a multiple of ssm_key_heads = 2") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) { o.n_rot = 5; }).find("n_rot = 5") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) { o.conv_kernel = 0; }).find("conv_kernel") !=
        std::string::npos);
  CHECK(message([](DemoModelOptions& o) {
          o.weight_type = GgmlType::Q8_0;
          o.ssm_value_head_dim = 6;
        }).find("ssm_value_heads*ssm_value_head_dim") != std::string::npos);
  CHECK(message([](DemoModelOptions& o) {
          o.arch = ModelArch::kQwen3Moe;
          o.n_experts_used = 9;
        }).find("n_experts_used = 9 exceeds n_experts = 8") != std::string::npos);
}

}  // namespace
}  // namespace ugrad::llm::test
