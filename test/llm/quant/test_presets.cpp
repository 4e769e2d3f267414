// llama-quantize's per-tensor rule (llm/quant/presets.h) against the type lists llama.cpp's own
// quantizer test pins for real Qwen files (docs/quants.md#presets): Qwen3-14B (40 blocks, 40/8
// heads), Qwen3-0.6B (28 blocks, 16/8 heads, tied head) and Qwen3.6-27B (a qwen35 hybrid, 64
// blocks, 24/4 heads), each tensor named as in the file; then the fallbacks for rows that are not
// whole blocks.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <set>
#include <string>

#include "base/error.h"
#include "llm/quant/presets.h"

using namespace ugrad;
using namespace ugrad::llm;
using T = GgmlType;

namespace {

const PresetModel kQwen3_14B{40, 5, false}, kQwen3_06B{28, 2, true}, kQwen36_27B{64, 6, false};

GgmlType type_of(std::string_view preset, const std::string& name, const PresetModel& m,
                 uint64_t ne0 = 5120) {
  return preset_type(preset_named(preset), name, ne0, m);
}

std::string blk(int i, std::string_view role) { return fmt::format("blk.{}.{}.weight", i, role); }

// Layers `first..last` inclusive, then single layers.
std::set<int> layers(std::initializer_list<std::pair<int, int>> ranges) {
  std::set<int> s;
  for (auto [a, b] : ranges)
    for (int i = a; i <= b; ++i) s.insert(i);
  return s;
}

// `role` of every block is `more` in the listed layers, `rest` elsewhere.
void check_role(std::string_view preset, std::string_view role, const PresetModel& m,
                const std::set<int>& where, GgmlType more, GgmlType rest) {
  for (int i = 0; i < static_cast<int>(m.n_blocks); ++i) {
    CAPTURE(preset);
    CAPTURE(role);
    CAPTURE(i);
    CHECK(format_of(type_of(preset, blk(i, role), m)).name ==
          format_of(where.count(i) ? more : rest).name);
  }
}

}  // namespace

TEST_CASE("presets: Qwen3-14B, the untied head and every rule of a 40-block model") {
  const PresetModel& m = kQwen3_14B;
  const std::set<int> more_bits = layers({{0, 4},
                                          {7, 7},
                                          {10, 10},
                                          {13, 13},
                                          {16, 16},
                                          {19, 19},
                                          {22, 22},
                                          {25, 25},
                                          {28, 28},
                                          {31, 31},
                                          {34, 39}});
  for (std::string_view p : {"Q4_K_M", "Q5_K_M"}) {
    const GgmlType base = preset_named(p).base;
    check_role(p, "attn_v", m, more_bits, T::Q6_K, base);
    check_role(p, "ffn_down", m, more_bits, T::Q6_K, base);
    check_role(p, "attn_q", m, {}, base, base);
    check_role(p, "ffn_up", m, {}, base, base);
    CHECK(type_of(p, "output.weight", m) == T::Q6_K);
    CHECK(type_of(p, "token_embd.weight", m) == base);
  }
  check_role("Q3_K_M", "attn_v", m, layers({{0, 1}}), T::Q5_K, T::Q4_K);
  check_role("Q3_K_M", "ffn_down", m, layers({{0, 1}}), T::Q5_K, T::Q4_K);
  check_role("Q3_K_M", "attn_output", m, {}, T::Q4_K, T::Q4_K);
  check_role("Q3_K_M", "attn_k", m, {}, T::Q3_K, T::Q3_K);
  for (std::string_view role : {"attn_v", "attn_output", "ffn_down"})
    check_role("Q3_K_L", role, m, {}, T::Q5_K, T::Q5_K);
  check_role("Q2_K", "attn_v", m, {}, T::Q4_K, T::Q4_K);  // n_gqa 5 >= 4
  check_role("Q2_K", "attn_output", m, {}, T::Q3_K, T::Q3_K);
  check_role("Q2_K", "ffn_down", m, {}, T::Q3_K, T::Q3_K);
  check_role("Q2_K", "ffn_gate", m, {}, T::Q2_K, T::Q2_K);
  check_role("Q4_K_S", "attn_v", m, layers({{0, 3}}), T::Q5_K, T::Q4_K);
  check_role("Q4_K_S", "ffn_down", m, layers({{0, 4}}), T::Q5_K, T::Q4_K);
  for (std::string_view p : {"IQ4_XS", "IQ4_NL"}) {
    const GgmlType base = preset_named(p).base;
    check_role(p, "attn_v", m, {}, T::Q5_K, T::Q5_K);
    check_role(p, "ffn_down", m, layers({{0, 4}}), T::Q5_K, base);
    CHECK(type_of(p, "output.weight", m) == T::Q6_K);
  }
  // Only the head differs from the base type.
  for (std::string_view p : {"Q4_0", "Q5_0", "Q3_K_S", "Q5_K_S", "Q6_K", "Q8_0"}) {
    const GgmlType base = preset_named(p).base;
    for (std::string_view role :
         {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      check_role(p, role, m, {}, base, base);
    CHECK(type_of(p, "output.weight", m) == (p == "Q8_0" ? T::Q8_0 : T::Q6_K));
  }
}

TEST_CASE("presets: Qwen3-0.6B, a tied head and fewer than 4 query heads per KV head") {
  const PresetModel& m = kQwen3_06B;
  CHECK(type_of("Q4_K_M", "token_embd.weight", m, 1024) == T::Q6_K);
  CHECK(type_of("Q8_0", "token_embd.weight", m, 1024) == T::Q8_0);
  check_role("Q2_K", "attn_v", m, {}, T::Q3_K, T::Q3_K);
  check_role("IQ4_XS", "attn_v", m, {}, T::IQ4_XS, T::IQ4_XS);
  check_role("IQ4_XS", "ffn_down", m, layers({{0, 2}}), T::Q5_K, T::IQ4_XS);
  check_role("Q3_K_M", "ffn_down", m, layers({{0, 0}}), T::Q5_K, T::Q4_K);
}

TEST_CASE("presets: Qwen3.6-27B, attn_qkv and attn_v share the rule of the value projection") {
  const PresetModel& m = kQwen36_27B;
  // Every 4th block is full attention (attn_v), the others Gated DeltaNet (attn_qkv).
  const auto value = [](int i) { return blk(i, (i + 1) % 4 == 0 ? "attn_v" : "attn_qkv"); };
  std::set<int> more_bits = layers({{0, 7}, {56, 63}});
  for (int i = 10; i <= 55; i += 3) more_bits.insert(i);
  for (int i = 0; i < 64; ++i) {
    CAPTURE(i);
    CHECK(type_of("Q4_K_M", value(i), m) == (more_bits.count(i) ? T::Q6_K : T::Q4_K));
    CHECK(type_of("Q3_K_M", value(i), m) == (i < 2 ? T::Q5_K : T::Q4_K));
    CHECK(type_of("Q4_K_S", value(i), m) == (i < 4 ? T::Q5_K : T::Q4_K));
    CHECK(type_of("IQ4_XS", value(i), m) == T::Q5_K);
    CHECK(type_of("Q2_K", value(i), m) == T::Q4_K);
    for (std::string_view role : {"attn_gate", "ssm_out", "ssm_alpha", "ssm_beta"})
      CHECK(type_of("Q4_K_M", blk(i, role), m) == T::Q4_K);
  }
  check_role("Q3_K_M", "ffn_down", m, layers({{0, 3}}), T::Q5_K, T::Q4_K);
  check_role("Q4_K_M", "ffn_down", m, more_bits, T::Q6_K, T::Q4_K);
}

TEST_CASE("presets: rows that are not whole blocks fall back as llama-quantize does") {
  const PresetModel& m = kQwen3_14B;
  CHECK(type_of("IQ4_XS", blk(0, "attn_q"), m, 96) == T::IQ4_NL);
  CHECK(type_of("Q2_K", blk(0, "attn_q"), m, 96) == T::Q4_0);
  CHECK(type_of("Q3_K_S", blk(0, "attn_q"), m, 96) == T::Q4_0);
  CHECK(type_of("Q4_K_M", blk(5, "attn_q"), m, 96) == T::Q5_0);
  CHECK(type_of("Q5_K_S", blk(0, "attn_q"), m, 96) == T::Q5_1);
  CHECK(type_of("Q4_K_M", blk(0, "ffn_down"), m, 96) == T::Q8_0);  // Q6_K
  CHECK(type_of("Q4_K_M", blk(5, "attn_q"), m, 48) == T::F16);     // Q5_0 does not fit either
  // The head: Q8_0 where the base type does not fit; Q6_K's fallback where only Q6_K does not.
  CHECK(type_of("Q2_K", "output.weight", m, 96) == T::Q8_0);
  CHECK(type_of("Q4_0", "output.weight", m, 96) == T::Q8_0);
  CHECK_THROWS_WITH_AS(type_of("Q8_0", blk(0, "attn_q"), m, 48),
                       doctest::Contains("blk.0.attn_q.weight: rows of 48 elements"), Error);
  CHECK_THROWS_WITH_AS(preset_named("Q4_K_X"),
                       doctest::Contains("unknown quantization preset 'Q4_K_X' (one of Q4_0"),
                       Error);
}
