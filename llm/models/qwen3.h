// Qwen3 (`general.architecture = qwen3`, and `qwen3moe` with the MoE FFN of llm/models/moe.h)
// written against the tensor API: RMSNorm, per-head q/k RMSNorm, NEOX RoPE, grouped-query
// attention over a half-precision KV cache, SwiGLU FFN, tied output when `output.weight` is
// absent. Weights stay in their GGUF format; every matmul dequantizes inside its kernel
// (llm/quant/lazy_dequant.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "llm/models/chunked_model.h"

namespace ugrad::llm {

class Qwen3Model : public ChunkedModel {
 public:
  /// Loads the model's weights (quantized, as in the file) onto `device` with a zeroed KV cache
  /// of `max_context` positions. An Error names what is wrong with the file.
  Qwen3Model(const GgufFile& file, int64_t max_context, const std::string& device = "");

 private:
  struct Layer {
    Tensor attn_norm;
    LinearGroup qkv;
    Linear wo;
    Tensor q_norm, k_norm, ffn_norm;
    FeedForward ffn;
    KvCache cache;
  };
  Tensor attention(Layer& layer, const Tensor& x, const Tensor& cos, const Tensor& sin,
                   const Chunk& chunk);
  Tensor layers(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) override;
  std::vector<const KvCache*> kv_caches() const override;

  std::vector<Layer> layers_;
};

}  // namespace ugrad::llm
