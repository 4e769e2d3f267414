#include "llm/models/layers.h"

#include <cmath>

#include "base/error.h"
#include "llm/kernels/attention.h"
#include "llm/models/model.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/lazy_dequant.h"
#include "runtime/realize.h"
#include "schedule/schedule.h"

namespace ugrad::llm {

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  return x * (x.square().mean({-1}, true) + eps).rsqrt() * w;
}

Tensor pre_norm(const Tensor& x, const Tensor& w, float eps) {
  return rms_norm(x, w, eps).contiguous();
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  const int64_t rows = x.size(0), heads = x.size(1), hd = x.size(2), half = cos.size(-1);
  auto part = [&](int64_t lo, int64_t hi) { return x.shrink({{0, rows}, {0, heads}, {lo, hi}}); };
  Tensor x1 = part(0, half), x2 = part(half, 2 * half);
  std::vector<Tensor> parts{x1 * cos - x2 * sin, x2 * cos + x1 * sin};
  if (2 * half < hd) parts.push_back(part(2 * half, hd));
  return cat(parts, 2);
}

std::pair<Tensor, Tensor> rope_tables(int64_t start_pos, int64_t rows, int64_t n_rot, float theta,
                                      const std::string& device) {
  const int64_t half = n_rot / 2;
  std::vector<float> cos_t(rows * half), sin_t(rows * half);
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(start_pos + p) *
                     std::pow(static_cast<double>(theta), -2.0 * i / static_cast<double>(n_rot));
      cos_t[p * half + i] = static_cast<float>(std::cos(angle));
      sin_t[p * half + i] = static_cast<float>(std::sin(angle));
    }
  return {Tensor::from_vector(cos_t, {rows, 1, half}, dtypes::float32, device),
          Tensor::from_vector(sin_t, {rows, 1, half}, dtypes::float32, device)};
}

Tensor swiglu(const Tensor& h, const LinearGroup& gate_up, const Linear& down) {
  // The projections are materialized (each a plain matmul kernel with the matmul optimizations,
  // or one fused kernel); their product is down's x, which the linear materializes or fuses into
  // its int8 quantization.
  const std::vector<Tensor> gu = gate_up(h);
  return down(gu[0].silu() * gu[1]);
}

// Rows past max_context - 1 take the padding of a chunk that starts near the end. The storage
// starts uninitialised: attention reads only positions a chunk has written (the generic path
// shrinks to [0, start_pos + rows), the flash kernels clamp their loads to the last written
// position), and zeroing ~470 MB at the 0.6B shape cost a second of every start. Its pages are
// faulted in ahead of the positions a model reaches (ChunkedModel::prefault_ahead).
KvCache::KvCache(int64_t max_context, int64_t kv_heads, int64_t head_dim, const std::string& device)
    : kv_heads_(kv_heads),
      head_dim_(head_dim),
      positions_(max_context + LanguageModel::kMaxChunk - 1) {
  const std::vector<int64_t> shape = {kv_heads, positions_, head_dim};
  k_ = Tensor::empty(shape, dtypes::float16, device);
  v_ = Tensor::empty(shape, dtypes::float16, device);
}

void KvCache::host_ranges(int64_t from, int64_t to, std::vector<std::span<std::byte>>& ranges,
                          std::vector<BufferRef>& owners) const {
  const auto row = static_cast<size_t>(head_dim_ * 2), head_bytes = positions_ * row;
  for (const Tensor& t : {k_, v_}) {
    BufferRef buffer = buffer_of(realized_buffer(t.node()));
    auto* base = static_cast<std::byte*>(buffer->as_host_ptr());
    if (!base) return;  // not host memory
    for (int64_t h = 0; h < kv_heads_; ++h)
      ranges.emplace_back(base + h * head_bytes + from * row, (to - from) * row);
    owners.push_back(std::move(buffer));
  }
}

Tensor KvCache::attend(const Tensor& q, const Tensor& k, const Tensor& v, const Chunk& chunk) {
  const int64_t n = chunk.rows, hd = head_dim_, kvh = kv_heads_;
  const UOp& sp = chunk.start_pos;
  auto at = [&](const Tensor& cache, const UOp& lo, const UOp& hi) {
    return cache.shrink_to({{dim(0), dim(kvh)}, {lo, hi}, {dim(0), dim(hd)}});
  };
  // q is realized with the cache writes: its projection shares their input (the normed,
  // int8-rounded rows), which a later schedule would compute again.
  Tensor writes[] = {at(k_, sp, sp + n).assign(k.permute({1, 0, 2}).cast(dtypes::float16)),
                     at(v_, sp, sp + n).assign(v.permute({1, 0, 2}).cast(dtypes::float16)),
                     attention_query(q, k_, chunk)};
  Tensor::realize_all(writes);
  return attention(writes[2], k_, v_, chunk);
}

Tensor embed_rows(const GgufTensor& table, std::span<const int32_t> tokens, int64_t rows,
                  const std::string& device) {
  const int64_t dim = static_cast<int64_t>(table.dims.at(0)),
                vocab = static_cast<int64_t>(table.dims.at(1));
  const size_t row_bytes_n = row_bytes(table.type, dim);
  std::vector<float> out(rows * dim, 0.0f);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab)
      fail("token id {} is outside the vocabulary [0, {})", tokens[i], vocab);
    auto src = table.data.subspan(static_cast<size_t>(tokens[i]) * row_bytes_n, row_bytes_n);
    dequantize(table.type, src, std::span<float>(out).subspan(i * dim, dim));
  }
  return Tensor::from_vector(out, {rows, dim}, dtypes::float32, device);
}

}  // namespace ugrad::llm
