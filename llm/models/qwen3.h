// Qwen3 (`general.architecture = qwen3`, and `qwen3moe` with the MoE FFN of llm/models/moe.h)
// written against the tensor API: embedding, RMSNorm, per-head q/k RMSNorm, NEOX RoPE,
// grouped-query attention over a half-precision KV cache, SwiGLU FFN, tied output when
// `output.weight` is absent. Weights stay in their GGUF format; every matmul
// dequantizes inside its kernel (llm/quant/lazy_dequant.h).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llm/gguf/gguf.h"
#include "llm/model/config.h"
#include "llm/models/layers.h"
#include "llm/models/model.h"
#include "llm/models/moe.h"
#include "runtime/jit.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

class Qwen3Model : public LanguageModel {
 public:
  /// Loads the model's weights (quantized, as in the file) onto `device` with a zeroed KV cache
  /// of `max_context` positions. An Error names what is wrong with the file.
  Qwen3Model(const GgufFile& file, int64_t max_context, const std::string& device = "");

  /// Writes the tokens' keys and values into the cache; see LanguageModel::forward.
  Tensor forward(std::span<const int32_t> tokens, int64_t start_pos) override;

  const ModelConfig& config() const override { return config_; }
  int64_t max_context() const override { return max_context_; }
  const std::string& device() const override { return device_; }

 private:
  struct Layer {
    Tensor attn_norm, wq, wk, wv, wo, q_norm, k_norm, ffn_norm;
    Tensor w_gate, w_up, w_down;    // dense FFN (qwen3)
    std::optional<MoeWeights> moe;  // qwen3moe
    KvCache cache;
  };
  // One captured graph per row count: kMaxChunk (prefill, padded) and 1 (decode).
  struct Step {
    Chunk chunk;
    std::unique_ptr<GraphJit> jit;
  };
  Tensor attention(Layer& layer, const Tensor& x, const Tensor& cos, const Tensor& sin,
                   const Chunk& chunk);
  Tensor body(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk);

  GgufFile file_;
  ModelConfig config_;
  int64_t max_context_;
  std::string device_;
  const GgufTensor* token_embd_ = nullptr;
  std::vector<Layer> layers_;
  Tensor output_norm_, output_;
  std::vector<std::pair<std::string, int64_t>> var_vals_;  // of the current forward call
  std::map<int64_t, Step> steps_;                          // by row count
};

}  // namespace ugrad::llm
