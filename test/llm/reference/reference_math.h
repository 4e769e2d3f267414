// Plain-loop f64 building blocks shared by the reference forward passes (qwen3, qwen35): metadata
// reads, weight decoding through the reference dequantizers, matvec, activations, softmax.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/float16.h"
#include "llm/gguf/gguf.h"
#include "llm/quant/dequantize.h"

namespace ugrad::llm::test {

/// A required u32 metadata value.
inline uint32_t key_u32(const GgufFile& f, const std::string& key) {
  if (!f.has(key)) fail("reference: metadata key '{}' is missing", key);
  return f.get_u32(key);
}

/// All elements of a tensor as f32 (via the reference dequantizers), after checking its dims.
inline std::vector<float> decode(const GgufFile& f, const std::string& name,
                                 std::vector<uint64_t> dims) {
  const GgufTensor& t = f.tensor(name);
  if (t.dims != dims) fail("reference: tensor '{}' has unexpected dims", name);
  std::vector<float> out(t.n_elements());
  dequantize(t.type, t.data, out);
  return out;
}

/// y = W x for W stored as ggml [in, out]: row o holds the `in` weights of output o.
inline std::vector<double> matvec(std::span<const float> w, std::span<const double> x, size_t out) {
  const size_t in = x.size();
  if (w.size() < in * out) fail("reference: matvec of {} x {} on {} weights", out, in, w.size());
  std::vector<double> y(out);
  for (size_t o = 0; o < out; ++o) {
    double acc = 0;
    for (size_t i = 0; i < in; ++i) acc += double(w[o * in + i]) * x[i];
    y[o] = acc;
  }
  return y;
}

/// x rounded to int8 levels as llm/quant/int8_rows.h defines them: per 32 values, scale =
/// max|x| / 127 and x -> scale * round(x / scale), halves away from zero (all zero: zeros).
inline std::vector<double> round_int8(std::span<const double> x) {
  constexpr size_t kBlock = 32;
  if (x.size() % kBlock != 0) fail("reference: int8 rounding of {} values", x.size());
  std::vector<double> out(x.size(), 0.0);
  for (size_t b = 0; b < x.size(); b += kBlock) {
    double amax = 0;
    for (size_t i = b; i < b + kBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
    if (amax == 0) continue;
    const double scale = amax / 127;
    for (size_t i = b; i < b + kBlock; ++i) out[i] = scale * std::round(x[i] / scale);
  }
  return out;
}

/// Whether the model rounds a `t` linear layer's input to int8 levels first (llm/kernels/linear.h).
inline bool rounds_input_int8(GgmlType t) {
  return t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K ||
         t == GgmlType::IQ4_XS || t == GgmlType::Q8_0;
}

/// A linear layer's matrix as the reference reads it: its elements, and whether the model rounds
/// the layer's input to int8 levels first (rounds_input_int8).
struct MatrixView {
  std::span<const float> w;
  bool int8_input = false;
};
struct Matrix {
  std::vector<float> w;
  bool int8_input = false;
  operator MatrixView() const { return {w, int8_input}; }
  bool empty() const { return w.empty(); }
};
inline Matrix decode_matrix(const GgufFile& f, const std::string& name,
                            std::vector<uint64_t> dims) {
  const GgmlType t = f.tensor(name).type;
  return {decode(f, name, std::move(dims)), rounds_input_int8(t)};
}
inline std::vector<double> matvec(MatrixView m, std::span<const double> x, size_t out) {
  if (!m.int8_input) return matvec(m.w, x, out);
  const std::vector<double> rounded = round_int8(x);
  return matvec(m.w, rounded, out);
}

/// v stored as float16 (the models' KV cache): each value rounded to the nearest half.
inline std::vector<double> as_half(std::span<const double> v) {
  std::vector<double> out;
  for (double x : v) out.push_back(half_to_float(float_to_half(static_cast<float>(x))));
  return out;
}

inline double silu(double v) { return v / (1.0 + std::exp(-v)); }

/// softmax in place; -inf entries get weight 0.
inline void softmax(std::span<double> s) {
  const double max = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& v : s) sum += (v = std::exp(v - max));
  for (double& v : s) v /= sum;
}

/// Grouped-query attention of one query over the first `n_keys` positions: per query head h
/// (reading KV head h / (n_heads / n_kv_heads)), softmax(q_h . k_j / sqrt(head_dim)) weights over
/// j < n_keys summing v_j. keys and values hold n_kv_heads * head_dim entries per position, one
/// position after another. Returns the heads concatenated (n_heads * head_dim).
inline std::vector<double> attend(std::span<const double> q, std::span<const double> keys,
                                  std::span<const double> values, size_t n_keys, uint32_t n_heads,
                                  uint32_t n_kv_heads, size_t head_dim) {
  const size_t kv_dim = n_kv_heads * head_dim, group = n_heads / n_kv_heads;
  const double scale = 1.0 / std::sqrt(double(head_dim));
  std::vector<double> heads(n_heads * head_dim, 0.0), scores(n_keys);
  for (uint32_t h = 0; h < n_heads; ++h) {
    const size_t kv_off = (h / group) * head_dim;
    for (size_t j = 0; j < n_keys; ++j) {
      double dot = 0;
      for (size_t d = 0; d < head_dim; ++d)
        dot += q[h * head_dim + d] * keys[j * kv_dim + kv_off + d];
      scores[j] = dot * scale;
    }
    softmax(scores);
    for (size_t j = 0; j < n_keys; ++j)
      for (size_t d = 0; d < head_dim; ++d)
        heads[h * head_dim + d] += scores[j] * values[j * kv_dim + kv_off + d];
  }
  return heads;
}

}  // namespace ugrad::llm::test
