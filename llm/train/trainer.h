// Trains a TrainableQwen3 on a FortuneCorpus: random windows of the training stream, AdamW with
// warm-up + cosine learning rate and gradient clipping, one TensorJit-captured step (forward,
// backward and update replay with no compiles); held-out loss; checkpoints that resume exactly;
// the trained model written as a GGUF that `llm` loads like any other (the full-size vocabulary:
// see write_gguf).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "llm/quant/formats.h"
#include "llm/tokenizer/vocab.h"
#include "llm/train/fortune_corpus.h"
#include "llm/train/qwen3_train.h"
#include "tensor/jit.h"
#include "tensor/optim.h"

namespace ugrad::llm {

struct TrainConfig {
  /// The blocks' shape; vocab and unseen come from the corpus.
  TrainShape shape;
  int64_t batch = 8, seq = 128;
  int64_t steps = 1000;
  double lr = 3e-3, min_lr = 3e-4;
  int64_t warmup = 50;
  double weight_decay = 0.01;
  double clip = 1.0;  // global gradient norm
  uint64_t seed = 1;
};

/// The model on the held-out samples' answers.
struct HeldOut {
  double loss = 0;                // mean cross-entropy, nats per token
  double unseen_probability = 0;  // mean probability of the unseen class (every unseen id together)
};

/// What a progress line needs after a step.
struct TrainProgress {
  int64_t step = 0, steps = 0;  // steps done, of
  double loss = 0;              // this step's mean loss
  double seconds = 0;           // since this run (or resume) started
  int64_t tokens = 0;           // trained by this run
};

class Trainer {
 public:
  /// The model drawn from config.seed; an Error if the corpus is too short for one window.
  Trainer(const FortuneCorpus& corpus, TrainConfig config);
  /// Runs steps until config.steps, calling `progress` after each.
  void train(const std::function<void(const TrainProgress&)>& progress = {});
  /// One step; returns its loss.
  double step();
  int64_t steps_done() const { return step_; }
  /// The held-out samples' answer tokens, each predicted from the sample's tokens before it (a
  /// sample longer than seq + 1 tokens is cut to its first seq + 1).
  HeldOut held_out();
  /// Writes the model, the optimizer's state and the step count (an F32/F64 GGUF).
  void save_checkpoint(const std::string& path) const;
  /// Restores what save_checkpoint wrote; an Error if it was written for another configuration
  /// or corpus.
  void load_checkpoint(const std::string& path);
  /// The model as a Qwen3 GGUF of `type` with `vocab` (the tokenizer the corpus was built with):
  /// token_embd and output cover every token id; an id the corpus never had gets the mean
  /// embedding and the unseen class's head row (together they have the probability the unseen
  /// class was trained to, each ln(unseen) less likely than the class).
  void write_gguf(const std::string& path, GgmlType type, const VocabData& vocab,
                  const std::string& description) const;
  const TrainableQwen3& model() const { return *model_; }
  const TrainConfig& config() const { return config_; }

 private:
  std::vector<Tensor> batch_at(int64_t step) const;
  std::string fingerprint() const;
  const FortuneCorpus& corpus_;
  TrainConfig config_;
  std::unique_ptr<TrainableQwen3> model_;
  std::unique_ptr<Adam> optimizer_;
  std::unique_ptr<TensorJit> jit_;
  int64_t step_ = 0;
};

}  // namespace ugrad::llm
