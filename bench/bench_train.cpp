// A training step of a 4-layer dim-256 Qwen3-shaped model (llm/train/qwen3_train.h; vocab 2048,
// batch 4 x 64 tokens, Adam) captured by a TensorJit: tokens/s and model FLOP/s (6 per weight per
// token plus attention), against OpenBLAS sgemm on the step's largest matmul shape measured in the
// same run. Usage: bench_train [steps]
#include <cblas.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "bench/openblas_baseline.h"
#include "llm/train/qwen3_train.h"
#include "tensor/jit.h"
#include "tensor/optim.h"

using namespace ugrad;
using namespace ugrad::bench;

int main(int argc, char** argv) {
  use_native_openblas_kernels(argv);
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
  const int64_t batch = 4, seq = 64;
  llm::TrainableQwen3 model({}, 1);
  Adam opt(model.params(), {.lr = 1e-3});
  TensorJit step([&](const std::vector<Tensor>& in) {
    opt.zero_grad();
    Tensor loss = model.loss(in[0], in[1]);
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  std::mt19937 rng(2);
  const auto batch_of = [&] {
    std::vector<int32_t> ids(batch * (seq + 1));
    for (int32_t& t : ids) t = static_cast<int32_t>(rng() % model.shape().vocab);
    const Tensor all = Tensor::from_vector(ids, {batch, seq + 1});
    return std::vector<Tensor>{all.shrink({{0, batch}, {0, seq}}).contiguous().realize(),
                               all.shrink({{0, batch}, {1, seq + 1}}).contiguous().realize()};
  };
  auto t0 = clock_type::now();
  double first = step(batch_of())[0].item<double>();
  step(batch_of())[0].item<double>();  // the capture
  const double warm = seconds(t0);
  t0 = clock_type::now();
  double last = 0;
  for (int s = 0; s < steps; ++s) last = step(batch_of())[0].item<double>();
  const double per_step = seconds(t0) / steps;
  const double tokens = static_cast<double>(batch * seq);
  const double flops = model.step_flops(batch * seq, seq);

  // OpenBLAS on the FFN's shape: (tokens x dim) @ (dim x ffn).
  const int m = static_cast<int>(batch * seq), k = static_cast<int>(model.shape().dim),
            n = static_cast<int>(model.shape().ffn_dim);
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  const double blas = best_call_seconds([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a.data(), k, b.data(), n,
                0.f, c.data(), n);
  });
  const double blas_gflops = 2.0 * m * n * k / blas * 1e-9;
  fmt::print("train step: 4 layers, dim 256, vocab 2048, batch {} x {}, Adam\n", batch, seq);
  fmt::print("  warm-up (eager + capture) {:.2f} s; loss {:.3f} -> {:.3f} over {} replayed steps\n",
             warm, first, last, steps);
  fmt::print("  {:.1f} ms/step, {:.0f} tokens/s, {:.2f} model GFLOP/s\n", per_step * 1e3,
             tokens / per_step, flops / per_step * 1e-9);
  fmt::print("  OpenBLAS sgemm {}x{}x{}: {:.1f} GFLOP/s -> model FLOP/s = {:.3f} of sgemm\n", m, k,
             n, blas_gflops, flops / per_step * 1e-9 / blas_gflops);
  return 0;
}
