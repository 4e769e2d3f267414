// The trainable Qwen3: its forward pass against the inference model's building blocks' contract
// (shapes, a causal mask: a later token cannot change an earlier logit), and training by
// backward() + Adam memorizing a small batch.
#include <doctest/doctest.h>

#include <cmath>

#include "base/error.h"
#include "llm/train/qwen3_train.h"
#include "tensor/jit.h"
#include "tensor/optim.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

const TrainShape kTiny{.n_layers = 2,
                       .dim = 32,
                       .n_heads = 2,
                       .n_kv_heads = 1,
                       .head_dim = 16,
                       .ffn_dim = 64,
                       .vocab = 40};

Tensor ids(const std::vector<int32_t>& v, int64_t batch) {
  return Tensor::from_vector(v, {batch, static_cast<int64_t>(v.size()) / batch}, dtypes::int32,
                             "CPU");
}

}  // namespace

TEST_CASE("the trainable model's logits are causal and shaped (batch, seq, vocab)") {
  TrainableQwen3 m(kTiny, 1, "CPU");
  const Tensor a = m.forward(ids({1, 2, 3, 4, 5, 6}, 2));
  CHECK(a.dims() == std::vector<int64_t>{2, 3, kTiny.vocab});
  // Changing the last token of each row leaves the logits of the positions before it.
  const Tensor b = m.forward(ids({1, 2, 9, 4, 5, 11}, 2));
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  const int64_t v = kTiny.vocab;
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t t = 0; t < v; ++t) {
        const size_t i = static_cast<size_t>((row * 3 + p) * v + t);
        if (p < 2) REQUIRE(va[i] == vb[i]);
      }
  CHECK(m.names().front() == "token_embd.weight");
  CHECK(m.names().back() == "output.weight");
  CHECK(m.params().size() == 2 + 11 * 2 + 1);
}

TEST_CASE("a trainable model of a shape whose heads do not divide is an Error") {
  TrainShape odd = kTiny;
  odd.n_kv_heads = 3;
  CHECK_THROWS_WITH_AS(TrainableQwen3(odd, 1), doctest::Contains("got 2 layers"), Error);
  TrainShape classes = kTiny;
  classes.classes = kTiny.vocab + 1;
  CHECK_THROWS_AS(TrainableQwen3(classes, 1), Error);
}

TEST_CASE("backward and Adam memorize a small batch") {
  TrainableQwen3 m(kTiny, 2, "CPU");
  Adam opt(m.params(), {.lr = 1e-2});
  const Tensor x = ids({1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22}, 2);
  const Tensor y = ids({5, 9, 13, 17, 21, 25, 6, 10, 14, 18, 22, 26}, 2);
  TensorJit step([&](const std::vector<Tensor>& in) {
    opt.zero_grad();
    Tensor loss = m.loss(in[0], in[1]);
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  const double first = step({x, y})[0].item<double>();
  CHECK(first == doctest::Approx(std::log(static_cast<double>(kTiny.vocab))).epsilon(0.05));
  double last = first;
  for (int s = 0; s < 40; ++s) last = step({x, y})[0].item<double>();
  MESSAGE("loss ", first, " -> ", last);
  CHECK(last < 0.2 * first);
}
