#include "llm/kernels/delta_scan.h"

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/chunk.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

UOp build(int64_t rows, int64_t heads, int64_t dk, int64_t dv, int64_t max_pos,
          const std::string& name) {
  KernelBuilder kb;
  View out = kb.buffer(dtypes::float32, {rows, heads, dv});
  View state = kb.buffer(dtypes::float32, {heads, dv, dk});
  View q = kb.buffer(dtypes::float32, {rows, heads, dk});
  View k = kb.buffer(dtypes::float32, {rows, heads, dk});
  View v = kb.buffer(dtypes::float32, {rows, heads, dv});
  View beta = kb.buffer(dtypes::float32, {rows, heads});
  View log_decay = kb.buffer(dtypes::float32, {rows, heads});
  UOp head = kb.global(heads), j = kb.local(dv);
  // The chunk's q and k of this head in LDS: [row][q | k | k again][d_k]. The state update
  // reads the second copy of k: a load of its own, so the compiler need not keep the first
  // one's d_k values live (next to the d_k of the state) until the update.
  View qk = kb.lds(dtypes::float32, {rows, 3, dk});
  std::vector<UOp> stores;
  for_each_item(j, dv, rows * dk, [&](const UOp& c, const UOp& gate) {
    const UOp row = c.idiv(dk), i = c % dk, kv = k(row, head, i);
    stores.push_back(lds_store(qk.at(row, 0, i), q(row, head, i), gate));
    stores.push_back(lds_store(qk.at(row, 1, i), kv, gate));
    stores.push_back(lds_store(qk.at(row, 2, i), kv, gate));
  });
  View shared = barrier(qk, stores);
  // A sequence's first chunk starts from zeros: the old state is not read at all (a fresh buffer
  // may hold anything, NaN included).
  const UOp continues = UOp::variable("start_pos", 0, max_pos).ne(idx(0));
  std::vector<UOp> s =
      generate(dk, [&](int64_t i) { return load(state.at(head, j, i), continues); });
  const UOp log2e = f32(1.0 / std::log(2.0));
  for (int64_t t = 0; t < rows; ++t) {
    const UOp decay = (log_decay(t, head) * log2e).alu(Op::EXP2), b = beta(t, head);
    const View row = shared[t];  // [q | k | k again][d_k]
    std::vector<UOp> p, sq, kq;
    for (int64_t i = 0; i < dk; ++i) {
      p.push_back(s[i] * row(1, i));
      sq.push_back(s[i] * row(0, i));
      kq.push_back(row(1, i) * row(0, i));
    }
    const UOp u = b * (v(t, head, j) - decay * sum(p));
    kb.store(out.at(t, head, j), decay * sum(sq) + u * sum(kq));
    for (int64_t i = 0; i < dk; ++i) s[i] = decay * s[i] + u * row(2, i);
  }
  for (int64_t i = 0; i < dk; ++i) kb.store(state.at(head, j, i), s[i]);
  return kb.build(name);
}

}  // namespace

std::optional<KernelNeeds> delta_scan_needs(int64_t rows, int64_t dk, int64_t dv) {
  if (rows < 1 || dk < 1 || dv < 1 || dv > 1024) return std::nullopt;
  return KernelNeeds{.lds_bytes = rows * 3 * dk * 4};
}

UOp delta_scan_kernel(int64_t rows, int64_t heads, int64_t dk, int64_t dv, int64_t max_pos) {
  if (!delta_scan_needs(rows, dk, dv) || heads < 1 || max_pos < 0)
    fail("delta_scan: no kernel for {} rows of {} heads of d_k {}, d_v {} (start_pos to {})", rows,
         heads, dk, dv, max_pos);
  const std::string name =
      fmt::format("delta_scan_{}x{}x{}x{}_max{}", rows, heads, dk, dv, max_pos);
  return cached_kernel(name, [&] { return build(rows, heads, dk, dv, max_pos, name); });
}

Tensor delta_scan(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& beta, const Tensor& log_decay, const UOp& start_pos) {
  const int64_t rows = q.size(0), heads = q.size(1), dk = q.size(2), dv = v.size(2);
  const int64_t max_pos = start_pos_variable(start_pos, "delta_scan").arg_as<ParamArg>().hi;
  UOp ast = delta_scan_kernel(rows, heads, dk, dv, max_pos);
  return custom_kernel(ast,
                       {Tensor::empty({rows, heads, dv}, dtypes::float32, state.device()), state, q,
                        k, v, beta, log_decay},
                       {start_pos})[0];
}

}  // namespace ugrad::llm
