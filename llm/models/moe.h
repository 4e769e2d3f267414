// The mixture-of-experts FFN of qwen3moe and qwen35moe on the tensor API (docs/qwen.md#moe-ffn): a
// router picks the top-k experts of each token with renormalised softmax weights, each chosen
// expert is a SwiGLU FFN, and qwen35moe adds a shared expert scaled by a sigmoid gate:
//   p = softmax(W_router h);  S = top-k of p (ties: the lower expert id);  w_e = p_e / Σ_S p
//   y = Σ_{e in S} w_e down_e(silu(gate_e h) * up_e h)  [+ sigmoid(w_shgate · h) down_sh(...)]
// The experts are selected per (token, slot) by ExpertLinears (llm/kernels/linear.h): on gfx1100
// a decode step's chosen experts run the int8 decode kernel; otherwise index_select on the
// expert axis of the lazy dequantized weights, which the code generator turns into direct loads
// (codegen/lower/gather_load.h), so a kernel reads only the chosen experts' quantized bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "llm/config/config.h"
#include "llm/kernels/linear.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

/// One layer's MoE weights: lazy tensors over the GGUF bytes (load_weight, load_experts).
struct MoeWeights {
  Tensor router;                     // (E, dim)     ffn_gate_inp
  ExpertLinears gate_exps, up_exps;  // (E, F, dim)  ffn_gate_exps, ffn_up_exps
  ExpertLinears down_exps;           // (E, dim, F)  ffn_down_exps
  int64_t n_used = 0;                // k: experts per token
  LinearGroup shared_gate_up;        // (S, dim) each; empty when absent (qwen3moe)
  Linear shared_down;                // (dim, S)
  Tensor shared_gate_inp;            // (dim,) the shared expert's sigmoid gate
};

/// The MoE weights of a layer by role; an Error when the layer or config has no MoE FFN.
/// `owner` keeps the file's bytes alive (see load_weight).
MoeWeights load_moe(const LayerWeights& lw, const ModelConfig& config, const std::string& device,
                    const std::shared_ptr<const void>& owner = nullptr);

/// The MoE FFN of h (rows, dim): (rows, dim) float32.
Tensor moe_ffn(const MoeWeights& w, const Tensor& h);

}  // namespace ugrad::llm
