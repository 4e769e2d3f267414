#include "llm/kernels/delta_rule.h"

#include <vector>

#include "llm/kernels/delta_scan.h"
#include "llm/kernels/materialized.h"
#include "runtime/device_features.h"

namespace ugrad::llm {

namespace {

// One row (decode), in place (`old` is the state as read): [M' k | M' q] with M' = decay M from
// the old state, then
// M <- M' + beta (v - M' k) (x) k, out = M' q + beta (v - M' k) (k . q).
Tensor delta_rule_row(const Tensor& state, const Tensor& old, const Tensor& q, const Tensor& k,
                      const Tensor& v, const Tensor& beta, const Tensor& log_decay) {
  const int64_t heads = q.size(1), dk = q.size(2), dv = v.size(2);
  // Read by several kernels: computed once. [k | q] (heads, 2, d_k).
  Tensor in[] = {cat({k.reshape({heads, 1, dk}), q.reshape({heads, 1, dk})}, 1),
                 v.reshape({heads, dv}), beta.reshape({heads, 1}),
                 log_decay.exp().reshape({heads, 1, 1})};
  Tensor::realize_all(in);
  const Tensor &kq = in[0], &vs = in[1], &betas = in[2], &decay = in[3];
  Tensor k1 = kq.shrink({{0, heads}, {0, 1}, {0, dk}}),
         q1 = kq.shrink({{0, heads}, {1, 2}, {0, dk}});
  Tensor proj = ((old * decay).unsqueeze(2) * kq.unsqueeze(1)).sum({-1});
  auto delta = [&](const Tensor& p) {  // (heads, d_v)
    return betas * (vs - p.shrink({{0, heads}, {0, dv}, {0, 1}}).reshape({heads, dv}));
  };
  Tensor out = proj.shrink({{0, heads}, {0, dv}, {1, 2}}).reshape({heads, dv}) +
               delta(proj) * (q1 * k1).sum({-1});
  Tensor done[] = {out.reshape({1, heads, dv}), proj};
  Tensor::realize_all(done);
  // In place: each element is read and written by one thread, after the projection it needs.
  state.assign(old * decay + delta(done[1]).reshape({heads, dv, 1}) * k1).realize();
  return done[0];
}

// A constant (n, n) float32 mask: 1 where pred(i, j).
template <typename Pred>
Tensor index_mask(int64_t n, Pred pred, const std::string& device) {
  std::vector<float> m(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) m[i * n + j] = pred(i, j) ? 1.0f : 0.0f;
  return Tensor::from_vector(m, {n, n}, dtypes::float32, device);
}

// The rows of a chunk at once in the WY form of docs/qwen.md#chunked-delta-rule (HF's
// chunk_gated_delta_rule), per head with S = M^T, G = cumsum(log decay), D[i][j] = exp(G_i - G_j)
// for j <= i, else 0:
//   A = strictly_lower((beta k_i . k_j) D),  T = (I + A)^-1,  U = T (beta v),
//   W = T (beta k exp(G)),  V' = U - W S,  out = (q exp(G)) S + ((q_i . k_j) D) V',
//   S <- exp(G_last) S + (k exp(G_last - G))^T V'.
// A padded row (beta 0, log decay 0) has a zero row in A, so its row of T is e_i and its rows of
// U, W and V' are exactly zero: it adds exact zeros to the state and to the other rows' outputs.
Tensor delta_rule_chunk(const Tensor& state, const Tensor& old, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& beta, const Tensor& log_decay) {
  const int64_t n = q.size(0), heads = q.size(1);
  const std::string& device = state.device();
  // Heads first: (heads, n, d); beta (heads, n, 1); G (heads, n).
  Tensor in[] = {q.permute({1, 0, 2}), k.permute({1, 0, 2}), v.permute({1, 0, 2}),
                 beta.transpose().unsqueeze(-1), log_decay.transpose().cumsum(1)};
  Tensor::realize_all(in);
  const Tensor &qh = in[0], &kh = in[1], &vh = in[2], &bh = in[3], &cum = in[4];
  Tensor lower = index_mask(
      n, [](int64_t i, int64_t j) { return i > j; }, device);
  Tensor lower_incl = index_mask(
      n, [](int64_t i, int64_t j) { return i >= j; }, device);
  // G_i - G_j <= 0 on and below the diagonal; above it the clamp keeps exp finite before the mask.
  Tensor decays = minimum(cum.unsqueeze(2) - cum.unsqueeze(1), 0.0).exp() * lower_incl;
  Tensor kb = kh * bh;
  // Materialized: read by every doubling step (measured: fused, the same kernels ran ~10% slower).
  Tensor a = (kb.matmul(kh.transpose()) * decays * lower).contiguous();
  // (I + A)^-1 by blocked inversion: with T the inverse of the diagonal blocks of size b, the
  // inverse of the blocks of size 2b is T - T A_off T, A_off = the lower-left b x b block of each
  // 2b block of A (as forward substitution, without the cancellation of a power series).
  Tensor t = Tensor::eye(n, std::nullopt, dtypes::float32, device);
  for (int64_t b = 1; b < n; b *= 2) {
    auto off_block = [b](int64_t i, int64_t j) {
      return i / (2 * b) == j / (2 * b) && i / b != j / b;
    };
    Tensor off = a * index_mask(n, off_block, device);
    t = t - t.matmul(off).matmul(t);
  }
  // Every product is its own kernel over materialized operands: an expression operand costs a
  // matmul its register tiling, and two products summed in one kernel (reduces over their own
  // ranges, one with strided loads) got no optimization at all (at the Qwen3.5-0.8B shape these
  // kernels ran 0.5-1.5 ms per chunk and layer).
  auto product = [](const Tensor& a, const Tensor& b) {
    return materialized(a).matmul(materialized(b)).contiguous();
  };
  Tensor eg = cum.exp().unsqueeze(-1);  // (heads, n, 1)
  Tensor s = old.transpose();           // (heads, d_k, d_v)
  Tensor vp = product(t, vh * bh) - product(product(t, kb * eg), s);
  Tensor qk = qh.matmul(kh.transpose()) * decays;
  Tensor out = product(qh * eg, s) + product(qk, vp);
  Tensor done[] = {out.permute({1, 0, 2}), vp};
  Tensor::realize_all(done);
  // In place: element (h, j, i) reads only itself of the old state (and V', computed before).
  Tensor g_last = cum.shrink({{0, heads}, {n - 1, n}});  // (heads, 1)
  Tensor k_decayed = kh * (g_last - cum).exp().unsqueeze(-1);
  state.assign(old * g_last.exp().unsqueeze(-1) + product(done[1].transpose(), k_decayed))
      .realize();
  return done[0];
}

}  // namespace

Tensor gated_delta_rule(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& beta, const Tensor& log_decay, const UOp& start_pos) {
  if (select(device_features(state.device()), delta_scan_needs(q.size(0), q.size(2), v.size(2))))
    return delta_scan(state, q, k, v, beta, log_decay, start_pos);
  // The state as this chunk reads it: zeros at position 0 (a selection: NaN left in the buffer
  // does not leak).
  const Tensor old = Tensor::from_dim(start_pos, state.device()).gt(0).where(state, 0.0);
  return q.size(0) == 1 ? delta_rule_row(state, old, q, k, v, beta, log_decay)
                        : delta_rule_chunk(state, old, q, k, v, beta, log_decay);
}

}  // namespace ugrad::llm
