// What the Qwen models share around their layers: the config and weights index of the file, the
// embedding rows and RoPE tables made on the host per call, the final norm and output projection,
// and the captured graphs every call runs through: the layers over a chunk padded to kMaxChunk
// rows (the real length and start_pos are variables) or over one row (decode), then, for logits,
// the output head as a graph of its own. A model supplies its layers.
#pragma once
#include <cstdint>
#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llm/config/config.h"
#include "llm/gguf/gguf.h"
#include "llm/models/layers.h"
#include "llm/models/model.h"
#include "runtime/jit.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

class ChunkedModel : public LanguageModel {
 public:
  /// Checks the call, then runs the graph for the chunk (eagerly on its first
  /// call, capturing on the second, replaying after). See LanguageModel::forward.
  Tensor forward(std::span<const int32_t> tokens, int64_t start_pos) final;
  void prefill(std::span<const int32_t> tokens, int64_t start_pos) final;
  void prepare() final;
  const ModelConfig& config() const final { return config_; }
  int64_t max_context() const final { return max_context_; }
  const std::string& device() const final { return device_; }

 protected:
  /// Reads the file's config and weights index (an Error names what is wrong with the file) and
  /// loads the output norm and projection. `name` names the model in JIT debug lines.
  ChunkedModel(const GgufFile& file, int64_t max_context, const std::string& device,
               std::string name);
  /// A weight of this file on the model's device (load_weight; the mapping stays alive).
  Tensor load(const GgufTensor* t) const;
  Linear load_linear(const GgufTensor* t) const;
  /// Linears that read one input, as a group (llm/kernels/linear.h).
  LinearGroup load_linears(std::initializer_list<const GgufTensor*> ts) const;
  /// The FFN of a layer: the MoE FFN when the config has experts, else dense SwiGLU.
  FeedForward load_ffn(const LayerWeights& lw) const;
  /// The KV caches of the model's attention layers.
  virtual std::vector<const KvCache*> kv_caches() const = 0;
  /// The layers over a chunk of embedded tokens x (rows, dim): the hidden states (rows, dim).
  /// cos and sin are the RoPE tables of the chunk's positions (rows, 1, n_rot / 2); the chunk's
  /// variables are bound.
  virtual Tensor layers(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) = 0;

  GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;  // points into file_
  int64_t max_context_;
  std::string device_;
  std::shared_ptr<const void> owner_;  // keeps the file's mapping alive under the weights

 private:
  struct Step {
    Chunk chunk;
    std::unique_ptr<GraphJit> jit;
  };
  /// The graph of the layers over `rows` rows (1 or kMaxChunk): the last real row's hidden state
  /// (1, dim).
  Step& step(int64_t rows);
  /// The graph of the final norm and the output projection: (1, dim) -> logits (1, vocab). Its
  /// own graph, so the chunk graphs serve forward() and prefill() alike.
  GraphJit& head();
  /// The step's inputs for `tokens` at start_pos: embedded rows, RoPE tables, bound variables.
  std::vector<UOp> inputs(const Step& step, std::span<const int32_t> tokens, int64_t start_pos);
  /// Keeps the KV caches' pages faulted in (prefault_async) ahead of `end`, the position after
  /// those the next call writes, a block of kPrefaultPositions at a time: a 4 KiB page of a head's
  /// rows faulted in by the chunk that first writes it cost ~5-13 us in a VM, ~6% of a 512-token
  /// prefill and ~3% of a decode step at the 0.6B shape. One thread at a time; a call that finds it
  /// busy leaves the next block to a later call.
  void prefault_ahead(int64_t end);
  static constexpr int64_t kPrefaultPositions = 1024;
  /// Runs the chunk through the graph for its row count, then the head when `logits`; returns
  /// the logits, or the last hidden row.
  Tensor run(std::span<const int32_t> tokens, int64_t start_pos, bool logits);
  std::string name_;
  Tensor output_norm_;
  Linear output_;
  std::map<int64_t, Step> steps_;  // by row count
  std::unique_ptr<GraphJit> head_;
  int64_t prefaulted_ = 0;      // positions [0, prefaulted_) are faulted in or being faulted in
  std::future<void> prefault_;  // holds the caches' buffers until it is done
};

}  // namespace ugrad::llm
