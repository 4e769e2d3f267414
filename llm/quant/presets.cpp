#include "llm/quant/presets.h"

#include <charconv>
#include <optional>
#include <string>

#include "base/error.h"

namespace ugrad::llm {
namespace {

using T = GgmlType;

constexpr QuantPreset kPresets[] = {
    {"Q4_0", 2, T::Q4_0},      {"Q8_0", 7, T::Q8_0},      {"Q5_0", 8, T::Q5_0},
    {"Q2_K", 10, T::Q2_K},     {"Q3_K_S", 11, T::Q3_K},   {"Q3_K_M", 12, T::Q3_K},
    {"Q3_K_L", 13, T::Q3_K},   {"Q4_K_S", 14, T::Q4_K},   {"Q4_K_M", 15, T::Q4_K},
    {"Q5_K_S", 16, T::Q5_K},   {"Q5_K_M", 17, T::Q5_K},   {"Q6_K", 18, T::Q6_K},
    {"IQ4_NL", 25, T::IQ4_NL}, {"IQ4_XS", 30, T::IQ4_XS},
};

// The tensors a rule names. attn_qkv (a Gated DeltaNet block's input projection) is attn_v's
// role: llama.cpp counts both as "attention wv", one per block.
enum class Role { kAttnV, kAttnOutput, kFfnDown };

// Which layers i of n blocks a rule takes.
enum class When {
  kAlways,
  kMoreBits,        // use_more_bits: i < n/8, i >= 7n/8, or (i - n/8) % 3 == 2
  kFirst,           // i < arg
  kFirstEighth,     // i < n/8
  kFirstSixteenth,  // i < n/16
  kGqa4,            // n_head / n_head_kv >= 4, every layer
};

struct Rule {
  std::string_view preset;
  Role role;
  When when;
  int arg;
  GgmlType type;
};

// The first rule of a preset and role whose layers match wins; no rule: the preset's base type.
constexpr Rule kRules[] = {
    {"Q2_K", Role::kAttnV, When::kGqa4, 0, T::Q4_K},
    {"Q2_K", Role::kAttnV, When::kAlways, 0, T::Q3_K},
    {"Q2_K", Role::kAttnOutput, When::kAlways, 0, T::Q3_K},
    {"Q2_K", Role::kFfnDown, When::kAlways, 0, T::Q3_K},
    {"Q3_K_M", Role::kAttnV, When::kFirst, 2, T::Q5_K},
    {"Q3_K_M", Role::kAttnV, When::kAlways, 0, T::Q4_K},
    {"Q3_K_M", Role::kAttnOutput, When::kAlways, 0, T::Q4_K},
    {"Q3_K_M", Role::kFfnDown, When::kFirstSixteenth, 0, T::Q5_K},
    {"Q3_K_M", Role::kFfnDown, When::kAlways, 0, T::Q4_K},
    {"Q3_K_L", Role::kAttnV, When::kAlways, 0, T::Q5_K},
    {"Q3_K_L", Role::kAttnOutput, When::kAlways, 0, T::Q5_K},
    {"Q3_K_L", Role::kFfnDown, When::kAlways, 0, T::Q5_K},
    {"Q4_K_S", Role::kAttnV, When::kFirst, 4, T::Q5_K},
    {"Q4_K_S", Role::kFfnDown, When::kFirstEighth, 0, T::Q5_K},
    {"Q4_K_M", Role::kAttnV, When::kMoreBits, 0, T::Q6_K},
    {"Q4_K_M", Role::kFfnDown, When::kMoreBits, 0, T::Q6_K},
    {"Q5_K_M", Role::kAttnV, When::kMoreBits, 0, T::Q6_K},
    {"Q5_K_M", Role::kFfnDown, When::kMoreBits, 0, T::Q6_K},
    {"IQ4_NL", Role::kAttnV, When::kGqa4, 0, T::Q5_K},
    {"IQ4_NL", Role::kFfnDown, When::kFirstEighth, 0, T::Q5_K},
    {"IQ4_XS", Role::kAttnV, When::kGqa4, 0, T::Q5_K},
    {"IQ4_XS", Role::kFfnDown, When::kFirstEighth, 0, T::Q5_K},
};

// A type whose blocks do not fit a row, and the one llama-quantize takes instead.
constexpr std::pair<GgmlType, GgmlType> kFallbacks[] = {
    {T::IQ4_XS, T::IQ4_NL}, {T::Q2_K, T::Q4_0}, {T::Q3_K, T::Q4_0},
    {T::Q4_K, T::Q5_0},     {T::Q5_K, T::Q5_1}, {T::Q6_K, T::Q8_0},
};

bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool takes(const Rule& r, int i, const PresetModel& m) {
  const int n = static_cast<int>(m.n_blocks);
  switch (r.when) {
    case When::kAlways:
      return true;
    case When::kMoreBits:
      return more_bits(i, n);
    case When::kFirst:
      return i < r.arg;
    case When::kFirstEighth:
      return i < n / 8;
    case When::kFirstSixteenth:
      return i < n / 16;
    case When::kGqa4:
      return m.n_gqa >= 4;
  }
  return false;
}

bool fits(GgmlType t, uint64_t ne0) { return ne0 % format_of(t).block_size == 0; }

// N of "blk.N.<role>"; -1 for a tensor outside the blocks.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  int i = -1;
  const char* first = name.data() + 4;
  std::from_chars(first, name.data() + name.size(), i);
  return i;
}

bool has(std::string_view name, std::string_view part) {
  return name.find(part) != std::string_view::npos;
}

}  // namespace

std::span<const QuantPreset> quant_presets() { return kPresets; }

const QuantPreset& preset_named(std::string_view name) {
  std::string names;
  for (const QuantPreset& p : kPresets) {
    if (p.name == name) return p;
    names += names.empty() ? "" : ", ";
    names += p.name;
  }
  fail("unknown quantization preset '{}' (one of {})", name, names);
}

GgmlType preset_type(const QuantPreset& preset, std::string_view name, uint64_t ne0,
                     const PresetModel& model) {
  GgmlType t = preset.base;
  const bool head = name == "output.weight" || (model.tied_output && name == "token_embd.weight");
  if (head) {
    // The output head keeps more bits: Q6_K, or Q8_0 where the base type's blocks do not fit.
    if (preset.base != T::Q8_0) t = fits(preset.base, ne0) ? T::Q6_K : T::Q8_0;
  } else {
    const std::optional<Role> role =
        has(name, "attn_v.weight") || has(name, "attn_qkv.weight") ? std::optional(Role::kAttnV)
        : has(name, "attn_output.weight") ? std::optional(Role::kAttnOutput)
        : has(name, "ffn_down")           ? std::optional(Role::kFfnDown)
                                          : std::nullopt;
    const int layer = layer_of(name);
    if (role)
      for (const Rule& r : kRules)
        if (r.preset == preset.name && r.role == *role && takes(r, layer, model)) {
          t = r.type;
          break;
        }
  }
  if (fits(t, ne0)) return t;
  for (const auto& [from, to] : kFallbacks)
    if (from == t) return fits(to, ne0) ? to : T::F16;
  fail("{}: rows of {} elements are not a whole number of {} blocks ({} presets stop here)", name,
       ne0, format_of(t).name, preset.name);
}

}  // namespace ugrad::llm
