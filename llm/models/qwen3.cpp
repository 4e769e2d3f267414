#include "llm/models/qwen3.h"

#include <cmath>

#include <fmt/format.h>

#include "runtime/jit.h"
#include "uop/error.h"

namespace ugrad::llm {

Qwen3Model::Qwen3Model(const GgufFile& file, int64_t max_context, const std::string& device)
    : file_(file),
      config_(ModelConfig::from_gguf(file_)),
      max_context_(max_context),
      device_(device) {
  if (max_context < 1) fail("max context {} must be at least 1", max_context);
  // ModelConfig also reads the qwen35 hybrids, whose layers this model cannot run.
  if (config_.arch != ModelArch::kQwen3 && config_.arch != ModelArch::kQwen3Moe)
    fail("model: architecture '{}' is not a Qwen3 model", arch_name(config_.arch));
  ModelWeights w = ModelWeights::from_gguf(file_, config_);
  token_embd_ = w.token_embd;
  std::shared_ptr<const void> owner = file_.keepalive();
  auto load = [&](const GgufTensor* t) { return load_weight(*t, device_, owner); };
  for (const LayerWeights& lw : w.layers) {
    Layer l{load(lw.attn_norm),
            load(lw.attn_q),
            load(lw.attn_k),
            load(lw.attn_v),
            load(lw.attn_output),
            load(lw.attn_q_norm),
            load(lw.attn_k_norm),
            load(lw.ffn_norm),
            Tensor(),
            Tensor(),
            Tensor(),
            std::nullopt,
            KvCache(max_context, config_.n_kv_heads, config_.head_dim, device_)};
    if (config_.moe) {
      l.moe = load_moe(lw, config_, device_);
    } else {
      l.w_gate = load(lw.ffn_gate);
      l.w_up = load(lw.ffn_up);
      l.w_down = load(lw.ffn_down);
    }
    layers_.push_back(std::move(l));
  }
  output_norm_ = load(w.output_norm);
  output_ = load(w.output);
}

Tensor Qwen3Model::attention(Layer& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                             const Chunk& chunk) {
  const int64_t n = chunk.rows, heads = config_.n_heads, kv_heads = config_.n_kv_heads,
                hd = config_.head_dim;
  // The projections are materialized: the norm's reduce and the rotation both read them.
  Tensor q =
      rms_norm(h.linear(l.wq).contiguous().reshape({n, heads, hd}), l.q_norm, config_.rms_eps);
  Tensor k =
      rms_norm(h.linear(l.wk).contiguous().reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = h.linear(l.wv).reshape({n, kv_heads, hd});
  Tensor out = l.cache.attend(rope(q, cos, sin), rope(k, cos, sin), v, chunk, var_vals_);
  return out.linear(l.wo);
}

// The whole network for a chunk of embedded tokens: the logits of the last real one, (1, vocab).
Tensor Qwen3Model::body(Tensor x, const Tensor& cos, const Tensor& sin, const Chunk& chunk) {
  for (Layer& l : layers_) {
    x.realize(var_vals_);
    x = x + attention(l, rms_norm(x, l.attn_norm, config_.rms_eps), cos, sin, chunk);
    x.realize(var_vals_);
    Tensor h = rms_norm(x, l.ffn_norm, config_.rms_eps);
    x = x + (l.moe ? moe_ffn(*l.moe, h) : swiglu(h, l.w_gate, l.w_up, l.w_down));
  }
  Tensor last = x.shrink_to({{chunk.len - 1, chunk.len}, {dim(0), dim(config_.dim)}});
  return rms_norm(last, output_norm_, config_.rms_eps).linear(output_);
}

Tensor Qwen3Model::forward(std::span<const int32_t> tokens, int64_t start_pos) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) fail("forward: no tokens");
  if (n > kMaxChunk) fail("forward: {} tokens in one call; the most is {}", n, kMaxChunk);
  if (start_pos < 0 || start_pos + n > max_context_)
    fail("forward: positions [{}, {}) exceed the context of {} tokens", start_pos, start_pos + n,
         max_context_);
  const int64_t rows = n == 1 ? 1 : kMaxChunk;
  Step& step = steps_[rows];
  if (!step.jit) {
    step.chunk = make_chunk(rows, max_context_);
    // Call 0 runs eagerly, call 1 captures, later calls only launch.
    step.jit = std::make_unique<GraphJit>(
        [this, &step](const std::vector<UOp>& in, const VarVals&) {
          Tensor logits = body(Tensor(in[0], device_), Tensor(in[1], device_),
                               Tensor(in[2], device_), step.chunk);
          return std::vector<UOp>{logits.node()};
        },
        fmt::format("qwen3 forward rows={}", rows));
  }
  var_vals_ = step.chunk.var_vals(start_pos, n);
  Tensor x = embed_rows(*token_embd_, tokens, rows, device_);
  auto [cos, sin] = rope_tables(start_pos, rows, config_.n_rot, config_.rope_theta, device_);
  Tensor inputs[] = {x, cos, sin};
  Tensor::realize_all(inputs);
  std::vector<UOp> out = (*step.jit)({x.node(), cos.node(), sin.node()}, var_vals_);
  return Tensor(out[0], device_);
}

}  // namespace ugrad::llm
