// The interface generate() and the `llm` command drive: a language model that runs chunks of up to
// kMaxChunk tokens at a position and keeps its own state (KV cache, recurrent states) between
// calls. load_model() picks the implementation from `general.architecture`.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "llm/config/config.h"
#include "llm/gguf/gguf.h"
#include "tensor/tensor.h"

namespace ugrad::llm {

class LanguageModel {
 public:
  /// The most tokens one forward() call takes. Prefill runs through one captured graph padded to
  /// this length (the real length is a variable); decode is a second graph of length 1.
  static constexpr int64_t kMaxChunk = 32;

  virtual ~LanguageModel() = default;
  virtual const ModelConfig& config() const = 0;
  virtual int64_t max_context() const = 0;
  virtual const std::string& device() const = 0;
  /// Runs 1..kMaxChunk `tokens` at positions [start_pos, start_pos + n) and returns the logits of
  /// the last one: a realized (1, vocab) float32 tensor on device(), overwritten by the next call.
  /// Positions before start_pos must hold the state of the same prefix.
  virtual Tensor forward(std::span<const int32_t> tokens, int64_t start_pos) = 0;
  /// forward() without the output head, for a prompt's chunks before its last: the state advances
  /// and no logits are computed (the head is ~5% of a Qwen3-0.6B chunk).
  virtual void prefill(std::span<const int32_t> tokens, int64_t start_pos) = 0;
  /// Compiles and captures the graphs forward() and prefill() run (a chunk, a decode step, the
  /// output head) without running them or touching the state: their first calls replay.
  virtual void prepare() = 0;
  /// True when the model carries a recurrent state that cannot be rolled back: it continues only
  /// from exactly the tokens it has consumed.
  virtual bool recurrent() const { return false; }
};

/// The model for the file's architecture, weights left in their GGUF formats, state sized for
/// `max_context` positions. An Error names an unsupported architecture or a bad file.
std::unique_ptr<LanguageModel> load_model(const GgufFile& file, int64_t max_context,
                                          const std::string& device = "");

}  // namespace ugrad::llm
