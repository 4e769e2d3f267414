// Qwen3.5 / 3.6 hybrid (`general.architecture = qwen35`) written against the tensor API and
// `qwen35moe` (docs/qwen.md: #qwen35-tensors, #gated-deltanet, #moe-ffn). Gated DeltaNet layers:
// causal depthwise conv over a carried conv state, L2-normalised q/k, the gated delta rule on a
// float32 recurrent state, gated RMSNorm with SiLU(z). Every `full_attention_interval`-th layer is
// gated full attention: per-head [q | gate] projection, q/k RMSNorm, NEOX RoPE on the first n_rot
// dims, sigmoid output gate. Dense SwiGLU FFN, or the MoE FFN for `qwen35moe` (llm/models/moe.h).
// Prefill chunks are padded to kMaxChunk rows; padded rows leave every state exactly as it was.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llm/config/config.h"
#include "llm/gguf/gguf.h"
#include "llm/kernels/delta_rule.h"
#include "llm/models/chunked_model.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

class Qwen35Model : public ChunkedModel {
 public:
  /// Loads the weights (quantized, as in the file) onto `device` with a zeroed KV cache of
  /// `max_context` positions and conv and recurrent states left as allocated (position 0 reads
  /// them as zeros). An Error names what is wrong with the file.
  Qwen35Model(const GgufFile& file, int64_t max_context, const std::string& device = "");

  /// forward() at start_pos 0 starts over from zeroed states (inside the graph: the states are
  /// read as zeros, whatever the buffers hold); any other start_pos must be the number of tokens
  /// consumed so far.
  bool recurrent() const override { return true; }

  /// The conv state (conv_kernel - 1, conv_dim) of Gated DeltaNet layer `layer`: its last inputs.
  const Tensor& conv_state(uint32_t layer) const;
  /// The recurrent state (H_v, d_v, d_k) float32 of Gated DeltaNet layer `layer`.
  const Tensor& recurrent_state(uint32_t layer) const;

 private:
  struct Attention {
    LinearGroup qkv;  // q is [q_h | gate_h] per head
    Linear wo;
    Tensor q_norm, k_norm;
    KvCache cache;
  };
  struct DeltaNet {
    LinearGroup in;  // the conv's input (qkv), z, beta, alpha
    Tensor conv, dt_bias, a;
    Tensor norm;
    Linear w_out;
    Tensor conv_state, state;  // realized, read and assigned by every forward call
  };
  struct Layer {
    Tensor attn_norm, ffn_norm;
    FeedForward ffn;
    std::optional<Attention> attn;
    std::optional<DeltaNet> gdn;
  };
  const DeltaNet& delta_net_layer(uint32_t layer) const;
  Tensor attention(Attention& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                   const Chunk& chunk);
  Tensor delta_net(DeltaNet& l, const Tensor& h, const Chunk& chunk);
  Tensor layers(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) override;
  std::vector<const KvCache*> kv_caches() const override;

  std::vector<Layer> layers_;
};

}  // namespace ugrad::llm
