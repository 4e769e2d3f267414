#include "llm/models/qwen3.h"

#include <cmath>

#include <fmt/format.h>

#include "llm/quant/dequantize.h"
#include "llm/quant/lazy_dequant.h"
#include "runtime/jit.h"
#include "uop/error.h"

namespace ugrad::llm {
namespace {

// A GGUF matrix [ne0 = in, ne1 = out] as a lazy (out, in) float tensor over its raw bytes; a
// vector [n] as (n,).
Tensor load_weight(const GgufTensor& t, const std::string& device) {
  std::vector<int64_t> shape(t.dims.rbegin(), t.dims.rend());  // ggml lists innermost first
  Tensor raw = Tensor::from_bytes(std::as_bytes(t.data), {static_cast<int64_t>(t.data.size())},
                                  dtypes::uint8, device);
  return dequantize_lazy(raw, t.type, shape);
}

// x / sqrt(mean(x^2) + eps) * w over the last axis.
Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  return x * (x.square().mean({-1}, true) + eps).rsqrt() * w;
}

}  // namespace

// The start position of a chunk of n tokens: in [0, max_context - n].
UOp Qwen3Model::start_pos_var(int64_t n) const {
  return UOp::variable("start_pos", 0, max_context_ - n);
}

Qwen3Model::Qwen3Model(const GgufFile& file, int64_t max_context, const std::string& device)
    : file_(file),
      config_(ModelConfig::from_gguf(file_)),
      max_context_(max_context),
      device_(device) {
  if (max_context < 1) fail("max context {} must be at least 1", max_context);
  // ModelConfig also reads qwen3moe and the qwen35 hybrids, whose layers this model cannot run.
  if (config_.arch != ModelArch::kQwen3) {
    fail("model: architecture '{}' is not supported by the Qwen3 model yet",
         arch_name(config_.arch));
  }
  ModelWeights w = ModelWeights::from_gguf(file_, config_);
  token_embd_ = w.token_embd;
  auto load = [&](const GgufTensor* t) {
    Tensor x = load_weight(*t, device_);
    return x;
  };
  const int64_t kv_heads = config_.n_kv_heads, hd = config_.head_dim;
  for (const LayerWeights& lw : w.layers) {
    Layer l{load(lw.attn_norm),
            load(lw.attn_q),
            load(lw.attn_k),
            load(lw.attn_v),
            load(lw.attn_output),
            load(lw.attn_q_norm),
            load(lw.attn_k_norm),
            load(lw.ffn_norm),
            load(lw.ffn_gate),
            load(lw.ffn_up),
            load(lw.ffn_down),
            Tensor(),
            Tensor()};
    l.cache_k = Tensor::zeros({max_context, kv_heads, hd}, dtypes::float16, device_).contiguous();
    l.cache_v = Tensor::zeros({max_context, kv_heads, hd}, dtypes::float16, device_).contiguous();
    l.cache_k.realize();
    l.cache_v.realize();
    layers_.push_back(std::move(l));
  }
  output_norm_ = load(w.output_norm);
  output_ = load(w.output);
}

// Rows of the embedding table for the tokens, dequantized on the host (only the rows needed).
Tensor Qwen3Model::embed(std::span<const int32_t> tokens) const {
  const int64_t dim = config_.dim;
  const size_t row_bytes_n = row_bytes(token_embd_->type, dim);
  std::vector<float> rows(tokens.size() * dim);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= static_cast<int64_t>(config_.vocab_size))
      fail("token id {} is outside the vocabulary [0, {})", tokens[i], config_.vocab_size);
    auto src = token_embd_->data.subspan(static_cast<size_t>(tokens[i]) * row_bytes_n, row_bytes_n);
    dequantize(token_embd_->type, src, std::span<float>(rows).subspan(i * dim, dim));
  }
  return Tensor::from_vector(rows, {static_cast<int64_t>(tokens.size()), dim}, dtypes::float32,
                             device_);
}

Tensor Qwen3Model::attention(Layer& l, const Tensor& h, const Tensor& cos, const Tensor& sin,
                             int64_t n) {
  const int64_t heads = config_.n_heads, kv_heads = config_.n_kv_heads, hd = config_.head_dim;
  const int64_t half = hd / 2;
  Tensor q = rms_norm(h.linear(l.wq).reshape({n, heads, hd}), l.q_norm, config_.rms_eps);
  Tensor k = rms_norm(h.linear(l.wk).reshape({n, kv_heads, hd}), l.k_norm, config_.rms_eps);
  Tensor v = h.linear(l.wv).reshape({n, kv_heads, hd});

  // NEOX RoPE: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) on the two halves of each head.
  auto rope = [&](const Tensor& x, int64_t nh) {
    Tensor x1 = x.shrink({{0, n}, {0, nh}, {0, half}}),
           x2 = x.shrink({{0, n}, {0, nh}, {half, hd}});
    return cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, 2);
  };
  q = rope(q, heads);
  k = rope(k, kv_heads);

  // Write this chunk's keys and values at [start_pos, start_pos + n): start_pos is a variable, so
  // every call with the same chunk length has the same graph (one schedule, no new kernels).
  UOp sp = start_pos_var(n);
  const int64_t ctx = max_context_;
  auto rows = [&](const Tensor& cache) {
    return cache.shrink_to({{sp, sp + n}, {dim(0), dim(kv_heads)}, {dim(0), dim(hd)}});
  };
  Tensor writes[] = {rows(l.cache_k).assign(k.cast(dtypes::float16)),
                     rows(l.cache_v).assign(v.cast(dtypes::float16))};
  Tensor::realize_all(writes, var_vals_);
  // Attend over the whole cache; positions after start_pos + p are masked out (stale rows too).
  const int64_t group = heads / kv_heads;
  auto expand_heads = [&](const Tensor& c) {  // (ctx, kv_heads, hd) -> (heads, ctx, hd)
    return c.cast(dtypes::float32)
        .reshape({ctx, kv_heads, 1, hd})
        .expand({ctx, kv_heads, group, hd})
        .reshape({ctx, heads, hd})
        .permute({1, 0, 2});
  };
  Tensor keys = expand_heads(l.cache_k), values = expand_heads(l.cache_v);
  Tensor scores =
      q.permute({1, 0, 2}).matmul(keys.transpose()) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor query_pos =
      (Tensor::from_dim(sp, device_) + Tensor::arange(n, dtypes::int32, device_)).reshape({n, 1});
  Tensor key_pos = Tensor::arange(ctx, dtypes::int32, device_).reshape({1, ctx});
  Tensor mask = key_pos.le(query_pos).where(0.0, -INFINITY).reshape({1, n, ctx});
  Tensor out = (scores + mask).softmax(-1).matmul(values);  // (heads, n, hd)
  return out.permute({1, 0, 2}).reshape({n, heads * hd}).linear(l.wo);
}

// cos and sin of every RoPE angle of positions [start_pos, start_pos + n): (n, 1, head_dim/2).
std::pair<Tensor, Tensor> Qwen3Model::rope_tables(int64_t start_pos, int64_t n) const {
  const int64_t hd = config_.head_dim, half = hd / 2;
  std::vector<float> cos_t(n * half), sin_t(n * half);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle =
          static_cast<double>(start_pos + p) *
          std::pow(static_cast<double>(config_.rope_theta), -2.0 * i / static_cast<double>(hd));
      cos_t[p * half + i] = static_cast<float>(std::cos(angle));
      sin_t[p * half + i] = static_cast<float>(std::sin(angle));
    }
  return {Tensor::from_vector(cos_t, {n, 1, half}, dtypes::float32, device_),
          Tensor::from_vector(sin_t, {n, 1, half}, dtypes::float32, device_)};
}

// The whole network for a chunk of n embedded tokens: the logits of the last one, (1, vocab).
Tensor Qwen3Model::body(Tensor x, const Tensor& cos, const Tensor& sin, int64_t n) {
  for (Layer& l : layers_) {
    x.realize(var_vals_);
    x = x + attention(l, rms_norm(x, l.attn_norm, config_.rms_eps), cos, sin, n);
    x.realize(var_vals_);
    Tensor h = rms_norm(x, l.ffn_norm, config_.rms_eps);
    x = x + (h.linear(l.w_gate).silu() * h.linear(l.w_up)).linear(l.w_down);
  }
  Tensor last = x.shrink({{n - 1, n}, {0, static_cast<int64_t>(config_.dim)}});
  return rms_norm(last, output_norm_, config_.rms_eps).linear(output_);
}

Tensor Qwen3Model::forward(std::span<const int32_t> tokens, int64_t start_pos) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) fail("forward: no tokens");
  if (start_pos < 0 || start_pos + n > max_context_)
    fail("forward: positions [{}, {}) exceed the context of {} tokens", start_pos, start_pos + n,
         max_context_);
  var_vals_ = {{start_pos_var(n).arg_as<ParamArg>().name, start_pos}};
  Tensor x = embed(tokens);
  auto [cos, sin] = rope_tables(start_pos, n);
  Tensor inputs[] = {x, cos, sin};
  Tensor::realize_all(inputs);
  // One JIT per chunk length: call 0 runs eagerly, call 1 captures, later calls only launch.
  auto& jit = jits_[n];
  if (!jit)
    jit = std::make_unique<GraphJit>(
        [this, n](const std::vector<UOp>& in, const VarVals&) {
          Tensor logits =
              body(Tensor(in[0], device_), Tensor(in[1], device_), Tensor(in[2], device_), n);
          return std::vector<UOp>{logits.node()};
        },
        fmt::format("qwen3 forward n={}", n));
  std::vector<UOp> out = (*jit)({x.node(), cos.node(), sin.node()}, var_vals_);
  return Tensor(out[0], device_);
}

}  // namespace ugrad::llm
