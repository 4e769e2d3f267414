#include "llm/models/moe.h"

#include <vector>

#include "base/error.h"
#include "llm/kernels/materialized.h"
#include "llm/models/layers.h"

namespace ugrad::llm {

MoeWeights load_moe(const LayerWeights& lw, const ModelConfig& config, const std::string& device,
                    const std::shared_ptr<const void>& owner) {
  if (!config.moe || !lw.ffn_gate_inp || !lw.ffn_gate_exps || !lw.ffn_up_exps || !lw.ffn_down_exps)
    fail("moe: the {} model has no MoE FFN in this layer", arch_name(config.arch));
  auto load = [&](const GgufTensor* t) { return t ? load_weight(*t, device, owner) : Tensor(); };
  MoeWeights w;
  w.router = load(lw.ffn_gate_inp);
  auto experts = [&](const GgufTensor* t) { return load_experts(*t, device, owner); };
  w.gate_exps = experts(lw.ffn_gate_exps);
  w.up_exps = experts(lw.ffn_up_exps);
  w.down_exps = experts(lw.ffn_down_exps);
  w.n_used = config.moe->n_experts_used;
  auto linear = [&](const GgufTensor* t) { return t ? load_linear(*t, device, owner) : Linear{}; };
  if (lw.ffn_gate_shexp && lw.ffn_up_shexp) {
    const GgufTensor* gate_up[] = {lw.ffn_gate_shexp, lw.ffn_up_shexp};
    w.shared_gate_up = load_linears(gate_up, device, owner);
  }
  w.shared_down = linear(lw.ffn_down_shexp);
  w.shared_gate_inp = load(lw.ffn_gate_inp_shexp);
  return w;
}

namespace {

// The k largest router logits of each row, in descending order: ids (rows, k) int32 and their
// renormalised softmax weights (rows, k). Expert e's rank is the number of experts ahead of it,
// j ahead of e iff l_j > l_e or (l_j == l_e and j < e), so ties go to the lower id; slot s holds
// the expert of rank s. A few small kernels, however large k is. The weights are the softmax over
// the chosen logits, which equals p_e / Σ_S p of the softmax over all experts.
std::pair<Tensor, Tensor> top_k(const Tensor& logits, int64_t k) {
  const int64_t rows = logits.size(0), n_experts = logits.size(1);
  Tensor l_e = logits.reshape({rows, n_experts, 1}), l_j = logits.reshape({rows, 1, n_experts});
  Tensor lower_id = Tensor::ones({n_experts, n_experts}, dtypes::bool_, logits.device()).tril(-1);
  Tensor ahead = l_j.gt(l_e) | (l_j.eq(l_e) & lower_id);                 // (rows, e, j)
  Tensor rank = ahead.cast(dtypes::int32).sum({2}).cast(dtypes::int32);  // (rows, E)
  Tensor slot = rank.one_hot(k).permute({0, 2, 1});                      // (rows, k, E)
  Tensor ids = slot.argmax(2);
  Tensor picked = slot.cast(dtypes::bool_).where(l_j, 0).sum({2});
  // Materialized (measured by test_moe: lazy, the expert kernels loop over all E experts).
  return {ids.contiguous(), picked.softmax(1).contiguous()};
}

}  // namespace

Tensor moe_ffn(const MoeWeights& w, const Tensor& h) {
  const int64_t rows = h.size(0), dim = h.size(1), k = w.n_used;
  if (k < 1 || k > w.router.size(0)) fail("moe: {} experts used of {}", k, w.router.size(0));
  auto [ids, weights] = top_k(h.linear(w.router), k);
  // Each (token, slot) reads its own expert: (rows, dim) -> (rows, k, F). Every expert product
  // is materialized, a plain matmul kernel: fused with SiLU or with the sum over the slots it
  // gets no matmul optimizations (~10x slower at 32 rows).
  std::optional<Int8Rows> int8_h, int8_act;  // h quantized once for gate and up
  Tensor gate = materialized(w.gate_exps(h, ids, int8_h));
  Tensor up = materialized(w.up_exps(h, ids, int8_h));
  // (rows, k, F) -> (rows, k, dim), weighted and summed over the slots.
  Tensor out = w.down_exps(gate.silu() * up, ids, int8_act);
  Tensor y = (out * weights.reshape({rows, k, 1})).sum({1});
  if (!w.shared_gate_up.linears.empty()) {
    Tensor shared = swiglu(h, w.shared_gate_up, w.shared_down);
    Tensor g = h.linear(w.shared_gate_inp.reshape({1, dim})).sigmoid();  // (rows, 1)
    y = y + g * shared;
  }
  return y;
}

}  // namespace ugrad::llm
