// A small MLP and a causal self-attention block, forward passes on random data through the lazy
// Tensor API. Run: ./build/examples/mlp (DEV=NULL:gfx1100 compiles every kernel without running).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "tensor/tensor.h"

using ugrad::Tensor;

namespace {

// Kaiming-uniform-style init: U(-1/sqrt(in), 1/sqrt(in)), as torch.nn.Linear does.
Tensor linear_weight(int64_t out, int64_t in) {
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  return Tensor::uniform({out, in}, -bound, bound);
}

Tensor mlp(const Tensor& x, int64_t hidden, int64_t classes) {
  int64_t in = x.size(-1);
  Tensor w1 = linear_weight(hidden, in), b1 = Tensor::zeros({hidden});
  Tensor w2 = linear_weight(classes, hidden), b2 = Tensor::zeros({classes});
  return x.linear(w1, b1).gelu().linear(w2, b2).softmax(-1);
}

// Single-head causal attention: softmax(q k^T / sqrt(d) + mask) v, then an output projection.
Tensor attention(const Tensor& x) {
  int64_t seq = x.size(0), d = x.size(1);
  Tensor q = x.linear(linear_weight(d, d)), k = x.linear(linear_weight(d, d)),
         v = x.linear(linear_weight(d, d));
  Tensor mask = Tensor::full({seq, seq}, -std::numeric_limits<double>::infinity()).triu(1);
  Tensor scores = q.matmul(k.transpose()) * (1.0 / std::sqrt(static_cast<double>(d))) + mask;
  return scores.softmax(-1).matmul(v).linear(linear_weight(d, d));
}

}  // namespace

int main() {
  try {
    Tensor::manual_seed(1234);
    auto start = std::chrono::steady_clock::now();

    Tensor x = Tensor::randn({4, 16});
    Tensor probs = mlp(x, 32, 10);
    std::printf("MLP class probabilities:\n%s\n", probs.to_string().c_str());
    std::printf("predicted classes:\n%s\n", probs.argmax(-1).to_string().c_str());
    std::printf("row sums (should be 1):\n%s\n\n", probs.sum({-1}).to_string().c_str());

    Tensor tokens = Tensor::randn({6, 8});
    Tensor y = attention(tokens);
    std::printf("causal attention output:\n%s\n", y.to_string().c_str());

    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("\ndone in %.1f ms (device %s)\n", ms, x.device().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp: %s\n", e.what());
    return 1;
  }
}
