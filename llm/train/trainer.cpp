#include "llm/train/trainer.h"

#include <chrono>
#include <cstring>
#include <map>
#include <random>

#include <fmt/format.h>

#include "base/error.h"
#include "llm/config/demo_model.h"
#include "llm/gguf/gguf.h"
#include "llm/gguf/writer.h"

namespace ugrad::llm {

namespace {

constexpr std::string_view kStepKey = "ugrad.train.step";
constexpr std::string_view kFingerprintKey = "ugrad.train.fingerprint";

std::string state_name(size_t i) { return fmt::format("optimizer.{}", i); }

// A realized float32/float64 tensor's bytes as a GGUF tensor (dims innermost first).
void add_tensor_bytes(GgufWriter& w, const std::string& name, const Tensor& t) {
  std::vector<uint64_t> dims;
  for (int64_t i = t.ndim() - 1; i >= 0; --i) dims.push_back(static_cast<uint64_t>(t.size(i)));
  if (dims.empty()) dims.push_back(1);
  std::vector<uint8_t> bytes;
  GgmlType type = GgmlType::F32;
  const auto copy = [&](const auto& values) {
    bytes.resize(values.size() * sizeof(values[0]));
    std::memcpy(bytes.data(), values.data(), bytes.size());
  };
  if (t.dtype() == dtypes::float64) {
    type = GgmlType::F64;
    copy(t.to_vector<double>());
  } else {
    copy(t.to_vector<float>());
  }
  w.add_tensor(name, std::move(dims), type, std::move(bytes));
}

// Assigns a checkpoint tensor's bytes to `t` (same element count and type).
void restore(const GgufFile& file, const std::string& name, const Tensor& t) {
  const GgufTensor& g = file.tensor(name);
  const bool f64 = t.dtype() == dtypes::float64;
  const size_t item = f64 ? 8 : 4;
  if (g.type != (f64 ? GgmlType::F64 : GgmlType::F32) ||
      g.nbytes != static_cast<uint64_t>(t.numel()) * item)
    fail("checkpoint: tensor {} has {} bytes of type {}, expected {} x {} bytes", name, g.nbytes,
         format_of(g.type).name, t.numel(), item);
  const auto bytes = std::as_bytes(g.data);
  t.assign(Tensor::from_bytes(bytes, t.dims(), t.dtype(), t.device())).realize();
}

}  // namespace

Trainer::Trainer(const FortuneCorpus& corpus, TrainConfig config)
    : corpus_(corpus), config_(config) {
  TrainShape& s = config_.shape;
  // The corpus's tokens, the unseen class, then padding to a multiple of 64 rows (the GEMM
  // tiling needs extents it divides).
  s.classes = static_cast<int64_t>(corpus.vocab.size()) + 1;
  s.vocab = (s.classes + 63) / 64 * 64;
  s.unseen = corpus.unseen();
  if (config_.batch <= 0 || config_.seq <= 0 || config_.steps < 0)
    fail("train: batch {}, seq {} and steps {} must be positive", config_.batch, config_.seq,
         config_.steps);
  if (static_cast<int64_t>(corpus.train.size()) <= config_.seq + 1)
    fail("train: the corpus has {} training tokens, fewer than one window of {}",
         corpus.train.size(), config_.seq + 1);
  model_ = std::make_unique<TrainableQwen3>(s, config_.seed);
  optimizer_ = std::make_unique<Adam>(
      model_->params(),
      AdamOptions{.lr = config_.lr, .weight_decay = config_.weight_decay, .decoupled = true});
  jit_ = std::make_unique<TensorJit>(
      [this](const std::vector<Tensor>& in) {
        optimizer_->zero_grad();
        Tensor loss = model_->loss(in[0], in[1]);
        loss.backward();
        std::vector<Tensor> params = model_->params();
        clip_grad_norm(params, config_.clip);
        optimizer_->step({loss});
        return std::vector<Tensor>{loss};
      },
      "train_step");
}

std::vector<Tensor> Trainer::batch_at(int64_t step) const {
  // Each step's windows depend only on (seed, step): a resumed run sees the same batches.
  std::mt19937_64 rng(config_.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step));
  const int64_t b = config_.batch, n = config_.seq;
  std::uniform_int_distribution<size_t> start(0, corpus_.train.size() - static_cast<size_t>(n) - 1);
  std::vector<int32_t> tokens(b * n), targets(b * n);
  for (int64_t i = 0; i < b; ++i) {
    const size_t at = start(rng);
    for (int64_t j = 0; j < n; ++j) {
      tokens[i * n + j] = corpus_.compact(corpus_.train[at + j]);
      targets[i * n + j] = corpus_.compact(corpus_.train[at + j + 1]);
    }
  }
  return {Tensor::from_vector(tokens, {b, n}).realize(),
          Tensor::from_vector(targets, {b, n}).realize()};
}

double Trainer::step() {
  optimizer_->set_lr(
      warmup_cosine_lr(step_, config_.warmup, config_.steps, config_.lr, config_.min_lr));
  const double loss = (*jit_)(batch_at(step_))[0].item<double>();
  ++step_;
  return loss;
}

void Trainer::train(const std::function<void(const TrainProgress&)>& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  while (step_ < config_.steps) {
    const double loss = step();
    tokens += config_.batch * config_.seq;
    if (progress) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      progress({.step = step_,
                .steps = config_.steps,
                .loss = loss,
                .seconds = seconds,
                .tokens = tokens});
    }
  }
}

HeldOut Trainer::held_out() {
  NoGradScope no_grad;
  const int64_t b = config_.batch, n = config_.seq, unseen = config_.shape.n_classes() - 1;
  HeldOut sum;
  size_t counted = 0;
  const auto& samples = corpus_.held_out;
  for (size_t first = 0; first < samples.size(); first += b) {
    std::vector<int32_t> tokens(b * n, 0), targets(b * n, 0);
    std::vector<bool> answer(b * n, false);
    for (int64_t i = 0; i < b && first + i < samples.size(); ++i) {
      const ChatSample& s = samples[first + i];
      const size_t len = std::min<size_t>(s.ids.size() - 1, n);
      for (size_t j = 0; j < len; ++j) {
        tokens[i * n + j] = corpus_.compact(s.ids[j]);
        targets[i * n + j] = corpus_.compact(s.ids[j + 1]);
        answer[i * n + j] = j + 1 >= s.answer_begin && j + 1 < s.answer_end;
      }
    }
    const Tensor logp = model_->log_probs(Tensor::from_vector(tokens, {b, n}));
    Tensor nll = model_->token_losses(logp, Tensor::from_vector(targets, {b, n}));
    Tensor p_unseen = logp.shrink({{0, b}, {0, n}, {unseen, unseen + 1}}).exp();
    std::vector<Tensor> both = {nll, p_unseen};
    Tensor::realize_all(both);
    const std::vector<float> nll_v = nll.to_vector<float>(), unseen_v = p_unseen.to_vector<float>();
    for (size_t k = 0; k < nll_v.size(); ++k)
      if (answer[k]) {
        sum.loss += nll_v[k];
        sum.unseen_probability += unseen_v[k];
        ++counted;
      }
  }
  if (counted == 0)
    fail("train: no held-out answer starts within the first {} tokens of its sample", n + 1);
  sum.loss /= static_cast<double>(counted);
  sum.unseen_probability /= static_cast<double>(counted);
  return sum;
}

std::string Trainer::fingerprint() const {
  const TrainShape& s = config_.shape;
  return fmt::format(
      "layers {} dim {} heads {}/{}x{} ffn {} classes {}+{} batch {} seq {} steps {} lr {}/{} "
      "warmup {} wd {} clip {} seed {} train tokens {}",
      s.n_layers, s.dim, s.n_heads, s.n_kv_heads, s.head_dim, s.ffn_dim, s.classes, s.unseen,
      config_.batch, config_.seq, config_.steps, config_.lr, config_.min_lr, config_.warmup,
      config_.weight_decay, config_.clip, config_.seed, corpus_.train.size());
}

void Trainer::save_checkpoint(const std::string& path) const {
  GgufWriter w;
  w.set_string("general.architecture", "ugrad-train-checkpoint");
  w.set_u64(kStepKey, static_cast<uint64_t>(step_));
  w.set_string(kFingerprintKey, fingerprint());
  for (size_t i = 0; i < model_->params().size(); ++i)
    add_tensor_bytes(w, model_->names()[i], model_->params()[i]);
  const std::vector<Tensor> state = optimizer_->state();
  for (size_t i = 0; i < state.size(); ++i) add_tensor_bytes(w, state_name(i), state[i]);
  // Write then rename: an interrupted save leaves the previous checkpoint whole.
  const std::string partial = path + ".partial";
  w.write(partial);
  if (std::rename(partial.c_str(), path.c_str()) != 0)
    fail("checkpoint: cannot rename {} to {}", partial, path);
}

void Trainer::load_checkpoint(const std::string& path) {
  const GgufFile file = GgufFile::open(path, FileMemory::Read);
  if (!file.has(kFingerprintKey)) fail("checkpoint {}: not a ugrad training checkpoint", path);
  const std::string_view theirs = file.get_string(kFingerprintKey);
  if (theirs != fingerprint())
    fail("checkpoint {} was written for another run ({}), this one is {}", path, theirs,
         fingerprint());
  for (size_t i = 0; i < model_->params().size(); ++i)
    restore(file, model_->names()[i], model_->params()[i]);
  const std::vector<Tensor> state = optimizer_->state();
  for (size_t i = 0; i < state.size(); ++i) restore(file, state_name(i), state[i]);
  step_ = static_cast<int64_t>(file.get_u64(kStepKey));
}

void Trainer::write_gguf(const std::string& path, GgmlType type, const VocabData& vocab,
                         const std::string& description) const {
  const TrainShape& s = config_.shape;
  if (vocab.tokens.size() != corpus_.n_vocab)
    fail("train: the vocabulary has {} tokens, the corpus was built with {}", vocab.tokens.size(),
         corpus_.n_vocab);
  DemoModelOptions o;
  o.n_layers = static_cast<uint32_t>(s.n_layers);
  o.dim = static_cast<uint32_t>(s.dim);
  o.n_heads = static_cast<uint32_t>(s.n_heads);
  o.n_kv_heads = static_cast<uint32_t>(s.n_kv_heads);
  o.head_dim = static_cast<uint32_t>(s.head_dim);
  o.ffn_dim = static_cast<uint32_t>(s.ffn_dim);
  o.context_length = static_cast<uint32_t>(config_.seq);
  o.rope_theta = s.rope_theta;
  o.rms_eps = s.rms_eps;
  o.weight_type = type;
  o.tied_output = false;
  o.vocab = vocab;
  o.name =
      fmt::format("ugrad fortune demo qwen3 {}L-{}d {}", s.n_layers, s.dim, format_of(type).name);
  o.description = description;
  for (size_t i = 0; i < model_->params().size(); ++i) {
    const std::string& name = model_->names()[i];
    if (name != "token_embd.weight" && name != "output.weight")
      o.weights[name] = model_->params()[i].to_vector<float>();
  }
  // The full-size embedding and head: compact rows placed at their token ids.
  const size_t dim = static_cast<size_t>(s.dim), seen = corpus_.vocab.size();
  const std::vector<float> embd = model_->param("token_embd.weight").to_vector<float>();
  const std::vector<float> head = model_->param("output.weight").to_vector<float>();
  std::vector<float> mean(dim, 0.0f);
  for (size_t r = 0; r < seen; ++r)
    for (size_t d = 0; d < dim; ++d) mean[d] += embd[r * dim + d] / static_cast<float>(seen);
  std::vector<float> full_embd(corpus_.n_vocab * dim), full_head(corpus_.n_vocab * dim);
  for (size_t t = 0; t < corpus_.n_vocab; ++t) {
    const size_t c = static_cast<size_t>(corpus_.compact(static_cast<TokenId>(t)));
    const float* e = c < seen ? &embd[c * dim] : mean.data();
    std::copy(e, e + dim, &full_embd[t * dim]);
    std::copy(&head[c * dim], &head[c * dim] + dim, &full_head[t * dim]);
  }
  o.weights["token_embd.weight"] = std::move(full_embd);
  o.weights["output.weight"] = std::move(full_head);
  write_demo_model(path, o);
}

}  // namespace ugrad::llm
