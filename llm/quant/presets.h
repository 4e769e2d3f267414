// llama-quantize's presets (Q4_K_M, IQ4_XS, ...) and the type each gives every tensor of a Qwen
// model: the per-tensor rule of llama.cpp's quantizer as data (docs/quants.md#presets), so that
// test and demo files carry the type mixtures that real files have.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "llm/quant/formats.h"

namespace ugrad::llm {

struct QuantPreset {
  std::string_view name;  // as llama-quantize spells it: "Q4_K_M"
  uint32_t file_type;     // general.file_type (llama_ftype)
  GgmlType base;          // the type of every matrix that no rule names
};

/// The presets, in llama_ftype order.
std::span<const QuantPreset> quant_presets();
/// The preset of that name; an Error lists the names.
const QuantPreset& preset_named(std::string_view name);

/// What the rule reads of a file: its block count (MTP blocks included), n_head / n_head_kv in
/// integer division, and whether it has no output.weight (the head is token_embd).
struct PresetModel {
  uint32_t n_blocks = 0;
  uint32_t n_gqa = 1;
  bool tied_output = true;
};

/// The type `preset` gives the tensor `name` (`blk.N.attn_v.weight`, `output.weight`, ...) whose
/// rows hold `ne0` elements: the rule of its role and layer, then the fallback for a row that is
/// not a whole number of the type's blocks (Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, ...; F16 past that).
/// Only matrices are asked: norms, ssm_conv1d and the routers stay in their source type. An Error
/// names a tensor whose rows no type of the rule fits, as llama-quantize stops there.
GgmlType preset_type(const QuantPreset& preset, std::string_view name, uint64_t ne0,
                     const PresetModel& model);

}  // namespace ugrad::llm
