#include "llm/kernels/delta_scan.h"

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/kernel_builder.h"
#include "llm/kernels/kernel_cache.h"
#include "tensor/custom_kernel.h"

namespace ugrad::llm {
namespace {

constexpr int64_t kLdsBytes = 64 * 1024;  // a workgroup's LDS on gfx11

UOp build(int64_t rows, int64_t heads, int64_t dk, int64_t dv, const std::string& name) {
  KernelBuilder kb;
  UOp out = kb.buffer(dtypes::float32, rows * heads * dv);
  UOp state = kb.buffer(dtypes::float32, heads * dv * dk);
  UOp q = kb.buffer(dtypes::float32, rows * heads * dk);
  UOp k = kb.buffer(dtypes::float32, rows * heads * dk);
  UOp v = kb.buffer(dtypes::float32, rows * heads * dv);
  UOp beta = kb.buffer(dtypes::float32, rows * heads);
  UOp log_decay = kb.buffer(dtypes::float32, rows * heads);
  UOp head = kb.global(heads), j = kb.local(dv);
  // The chunk's q and k of this head in LDS: [row][q | k | k again][d_k]. The state update
  // reads the second copy of k: a load of its own, so the compiler need not keep the first
  // one's d_k values live (next to the d_k of the state) until the update.
  UOp qk = kb.lds(dtypes::float32, rows * 3 * dk);
  std::vector<UOp> stores;
  for (int64_t it = 0; it * dv < rows * dk; ++it) {
    const UOp c = j + it * dv;  // element (row c / d_k, dim c % d_k)
    const UOp gate = (rows * dk) % dv ? c.lt(rows * dk) : UOp();
    const UOp row = c.idiv(dk), i = c % dk, src = (row * heads + head) * dk + i;
    const UOp kv = kb.load(k, src);
    stores.push_back(KernelBuilder::lds_store(qk, (row * 3) * dk + i, kb.load(q, src), gate));
    stores.push_back(KernelBuilder::lds_store(qk, (row * 3 + 1) * dk + i, kv, gate));
    stores.push_back(KernelBuilder::lds_store(qk, (row * 3 + 2) * dk + i, kv, gate));
  }
  UOp shared = KernelBuilder::barrier(qk, stores);
  std::vector<UOp> s(static_cast<size_t>(dk));
  for (int64_t i = 0; i < dk; ++i) s[i] = kb.load(state, (head * dv + j) * dk + i);
  const UOp log2e = UOp::cnst(dtypes::float32, 1.0 / std::log(2.0));
  for (int64_t t = 0; t < rows; ++t) {
    const UOp at = UOp::cnst_int(dtypes::index, t * heads) + head;
    const UOp decay = (kb.load(log_decay, at) * log2e).alu(Op::EXP2), b = kb.load(beta, at);
    const auto row = [&](int64_t part, int64_t i) {
      return kb.load(shared, UOp::cnst_int(dtypes::index, (t * 3 + part) * dk + i));
    };
    UOp p, sq, kq;
    for (int64_t i = 0; i < dk; ++i) {
      const UOp qi = row(0, i), ki = row(1, i);
      p = p ? p + s[i] * ki : s[i] * ki;
      sq = sq ? sq + s[i] * qi : s[i] * qi;
      kq = kq ? kq + ki * qi : ki * qi;
    }
    const UOp u = b * (kb.load(v, at * dv + j) - decay * p);
    kb.store(out, at * dv + j, decay * sq + u * kq);
    for (int64_t i = 0; i < dk; ++i) s[i] = decay * s[i] + u * row(2, i);
  }
  for (int64_t i = 0; i < dk; ++i) kb.store(state, (head * dv + j) * dk + i, s[i]);
  return kb.build(name);
}

}  // namespace

bool delta_scan_supports(int64_t rows, int64_t dk, int64_t dv) {
  return rows >= 1 && dk >= 1 && dv >= 1 && dv <= 1024 && rows * 3 * dk * 4 <= kLdsBytes;
}

UOp delta_scan_kernel(int64_t rows, int64_t heads, int64_t dk, int64_t dv) {
  if (!delta_scan_supports(rows, dk, dv) || heads < 1)
    fail("delta_scan: no kernel for {} rows of {} heads of d_k {}, d_v {}", rows, heads, dk, dv);
  const std::string name = fmt::format("delta_scan_{}x{}x{}x{}", rows, heads, dk, dv);
  return cached_kernel(name, [&] { return build(rows, heads, dk, dv, name); });
}

Tensor delta_scan(const Tensor& state, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& beta, const Tensor& log_decay) {
  const int64_t rows = q.size(0), heads = q.size(1), dk = q.size(2), dv = v.size(2);
  UOp ast = delta_scan_kernel(rows, heads, dk, dv);
  return custom_kernel(ast, {Tensor::empty({rows, heads, dv}, dtypes::float32, state.device()),
                             state, q, k, v, beta, log_decay})[0];
}

}  // namespace ugrad::llm
