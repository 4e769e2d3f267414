#include "llm/models/chunked_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "base/huge_pages.h"

namespace ugrad::llm {

ChunkedModel::ChunkedModel(const GgufFile& file, int64_t max_context, const std::string& device,
                           std::string name)
    : file_(file),
      config_(ModelConfig::from_gguf(file_)),
      weights_(ModelWeights::from_gguf(file_, config_)),
      max_context_(max_context),
      device_(device),
      owner_(file_.keepalive()),
      name_(std::move(name)) {
  if (max_context < 1) fail("max context {} must be at least 1", max_context);
  output_norm_ = load(weights_.output_norm);
  output_ = llm::load_linear(*weights_.output, device_, owner_, /*one_row=*/true);
}

GraphJit& ChunkedModel::head() {
  if (!head_)
    head_ = std::make_unique<GraphJit>(
        [this](const std::vector<UOp>& in) {
          Tensor last(in[0], device_);
          return std::vector<UOp>{output_(pre_norm(last, output_norm_, config_.rms_eps)).node()};
        },
        fmt::format("{} head", name_));
  return *head_;
}

Tensor ChunkedModel::load(const GgufTensor* t) const { return load_weight(*t, device_, owner_); }
Linear ChunkedModel::load_linear(const GgufTensor* t) const {
  return llm::load_linear(*t, device_, owner_);
}

LinearGroup ChunkedModel::load_linears(std::initializer_list<const GgufTensor*> ts) const {
  return llm::load_linears(ts, device_, owner_);
}

FeedForward ChunkedModel::load_ffn(const LayerWeights& lw) const {
  if (config_.moe) return {{}, {}, load_moe(lw, config_, device_, owner_)};
  return {load_linears({lw.ffn_gate, lw.ffn_up}), load_linear(lw.ffn_down), std::nullopt};
}

Tensor ChunkedModel::forward(std::span<const int32_t> tokens, int64_t start_pos) {
  return run(tokens, start_pos, true);
}

void ChunkedModel::prefill(std::span<const int32_t> tokens, int64_t start_pos) {
  run(tokens, start_pos, false);
}

ChunkedModel::Step& ChunkedModel::step(int64_t rows) {
  Step& step = steps_[rows];
  if (step.jit) return step;
  step.chunk = make_chunk(rows, max_context_);
  step.jit = std::make_unique<GraphJit>(
      [this, rows](const std::vector<UOp>& in) {
        const Chunk c = Chunk::from_variables(rows, {in.begin() + 3, in.end()});
        Tensor x =
            layers(Tensor(in[0], device_), Tensor(in[1], device_), Tensor(in[2], device_), c);
        Tensor last = x.shrink_to({{c.len - 1, c.len}, {dim(0), dim(config_.dim)}});
        return std::vector<UOp>{last.node()};
      },
      fmt::format("{} rows={}", name_, rows));
  return step;
}

std::vector<UOp> ChunkedModel::inputs(const Step& step, std::span<const int32_t> tokens,
                                      int64_t start_pos) {
  const int64_t rows = step.chunk.rows, n = static_cast<int64_t>(tokens.size());
  Tensor x = embed_rows(*weights_.token_embd, tokens, rows, device_);
  auto [cos, sin] = rope_tables(start_pos, rows, config_.n_rot, config_.rope_theta, device_);
  Tensor inputs[] = {x, cos, sin};
  Tensor::realize_all(inputs);
  std::vector<UOp> in{x.node(), cos.node(), sin.node()};
  for (const UOp& v : step.chunk.bind(start_pos, n).variables()) in.push_back(v);
  return in;
}

Tensor ChunkedModel::run(std::span<const int32_t> tokens, int64_t start_pos, bool logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) fail("forward: no tokens");
  if (n > kMaxChunk) fail("forward: {} tokens in one call; the most is {}", n, kMaxChunk);
  if (start_pos < 0 || start_pos + n > max_context_)
    fail("forward: positions [{}, {}) exceed the context of {} tokens", start_pos, start_pos + n,
         max_context_);
  prefault_ahead(start_pos + n);
  Step& s = step(n == 1 ? 1 : kMaxChunk);
  const UOp last = (*s.jit)(inputs(s, tokens, start_pos))[0];
  if (!logits) return Tensor(last, device_);
  return Tensor(head()({last})[0], device_);
}

void ChunkedModel::prefault_ahead(int64_t end) {
  const std::vector<const KvCache*> caches = kv_caches();
  if (caches.empty()) return;
  // A block at a time, once less than a quarter of a block lies ahead: a block takes ~0.16 s of
  // a thread at the 0.6B shape in a VM, and a quarter is ~0.8 s of prefill, ~2.5 s of decode.
  const int64_t positions = caches[0]->positions();
  if (prefaulted_ >= std::min(end + kPrefaultPositions / 4, positions)) return;
  if (prefault_.valid() && prefault_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    return;
  const int64_t from = std::max(prefaulted_, end),
                to = std::min(from + kPrefaultPositions, positions);
  std::vector<std::span<std::byte>> ranges;
  auto owners = std::make_shared<std::vector<BufferRef>>();
  for (const KvCache* c : caches) c->host_ranges(from, to, ranges, *owners);
  if (!ranges.empty()) prefault_ = prefault_async(std::move(ranges), std::move(owners));
  prefaulted_ = to;
}

void ChunkedModel::prepare() {
  prefault_ahead(0);
  const int32_t token = 0;
  for (int64_t rows : {kMaxChunk, int64_t{1}}) {
    Step& s = step(rows);
    s.jit->capture_without_running(inputs(s, std::span(&token, 1), 0));
  }
  Tensor last = Tensor::empty({1, config_.dim}, dtypes::float32, device_);
  last.realize();
  head().capture_without_running({last.node()});
}

}  // namespace ugrad::llm
