// The fused gated-delta scan (llm/kernels/delta_scan.h) on the default device (CTest runs it again
// on DEV=AMD through the gfx1100 emulator): against the recurrence in double on the host, chunk
// lengths 1, 5 and 32 at start positions 0 (a zero state, not read), 31 and 1000; padded rows
// (beta 0, log decay 0) leave the state and the real rows' outputs bit for bit as a chunk of the
// real rows alone.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "base/env.h"
#include "base/error.h"
#include "llm/kernels/chunk.h"
#include "llm/kernels/delta_scan.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int64_t kHeads = 2, kDk = 128, kDv = 64;

struct Inputs {
  std::vector<float> state, q, k, v, beta, log_decay;
};

// Random inputs for `rows` rows of which the first `real` are real (the rest padding); q and k
// unit-normalized per head as the model's are.
Inputs inputs(int64_t rows, int64_t real, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  Inputs in;
  for (int64_t i = 0; i < kHeads * kDv * kDk; ++i) in.state.push_back(0.1f * normal(rng));
  for (std::vector<float>* x : {&in.q, &in.k}) {
    x->resize(rows * kHeads * kDk);
    for (int64_t r = 0; r < rows * kHeads; ++r) {
      double norm = 0;
      for (int64_t i = 0; i < kDk; ++i) norm += std::pow((*x)[r * kDk + i] = normal(rng), 2);
      for (int64_t i = 0; i < kDk; ++i) (*x)[r * kDk + i] /= static_cast<float>(std::sqrt(norm));
    }
  }
  for (int64_t i = 0; i < rows * kHeads * kDv; ++i) in.v.push_back(normal(rng));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < kHeads; ++h) {
      in.beta.push_back(r < real ? unit(rng) : 0.0f);
      in.log_decay.push_back(r < real ? -unit(rng) : 0.0f);
    }
  return in;
}

// The recurrence row after row in double: outputs (rows, heads, d_v); `state` updated.
std::vector<double> reference(const Inputs& in, int64_t rows, std::vector<double>& state) {
  std::vector<double> out(rows * kHeads * kDv);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < kHeads; ++h) {
      const double g = std::exp(double(in.log_decay[t * kHeads + h])), b = in.beta[t * kHeads + h];
      const float* k = &in.k[(t * kHeads + h) * kDk];
      const float* q = &in.q[(t * kHeads + h) * kDk];
      for (int64_t j = 0; j < kDv; ++j) {
        double* s = &state[(h * kDv + j) * kDk];
        double p = 0;
        for (int64_t i = 0; i < kDk; ++i) p += (s[i] *= g) * k[i];
        const double u = b * (in.v[(t * kHeads + h) * kDv + j] - p);
        double o = 0;
        for (int64_t i = 0; i < kDk; ++i) o += (s[i] += u * k[i]) * q[i];
        out[(t * kHeads + h) * kDv + j] = o;
      }
    }
  return out;
}

// The kernel on the default device at `start_pos` (0: the state is not read): outputs and the
// final state.
std::pair<std::vector<float>, std::vector<float>> run(const Inputs& in, int64_t rows,
                                                      int64_t start_pos = 31) {
  const std::string dev = knob_str(Knob::DEV);
  Tensor state = Tensor::from_vector(in.state, {kHeads, kDv, kDk}, dtypes::float32, dev).realize();
  auto t = [&](const std::vector<float>& x, std::vector<int64_t> shape) {
    return Tensor::from_vector(
        std::vector<float>(x.begin(),
                           x.begin() + rows * shape[1] * (shape.size() > 2 ? shape[2] : 1)),
        shape, dtypes::float32, dev);
  };
  Tensor out = delta_scan(state, t(in.q, {rows, kHeads, kDk}), t(in.k, {rows, kHeads, kDk}),
                          t(in.v, {rows, kHeads, kDv}), t(in.beta, {rows, kHeads}),
                          t(in.log_decay, {rows, kHeads}),
                          make_chunk(rows, 2048).bind(start_pos, rows).start_pos);
  return {out.to_vector<float>(), state.to_vector<float>()};
}

}  // namespace

TEST_CASE("delta_scan: matches the recurrence in double for chunks of 1, 5 and 32 rows") {
  // Start position 0 reads the state as zeros (the buffer holds NaN: none of it may leak); 31
  // and 1000 read it.
  for (int64_t start_pos : {0, 31, 1000})
    for (int64_t rows : {1, 5, 32}) {
      CAPTURE(start_pos);
      CAPTURE(rows);
      Inputs in = inputs(rows, rows, 3);
      if (start_pos == 0) in.state.assign(in.state.size(), 0.0f);
      std::vector<double> state(in.state.begin(), in.state.end());
      const std::vector<double> want = reference(in, rows, state);
      if (start_pos == 0) in.state.assign(in.state.size(), NAN);
      const auto [out, got_state] = run(in, rows, start_pos);
      REQUIRE(out.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) CHECK(std::fabs(out[i] - want[i]) < 1e-4);
      for (size_t i = 0; i < state.size(); ++i) CHECK(std::fabs(got_state[i] - state[i]) < 1e-5);
    }
}

TEST_CASE("delta_scan: padded rows change nothing, bit for bit") {
  // A chunk of padding alone leaves the state as it was.
  const Inputs none = inputs(32, 0, 4);
  CHECK(run(none, 32).second == none.state);
  // 5 real rows, then padding whose q, k and v differ: the same state and real outputs.
  const Inputs a = inputs(32, 5, 5);
  Inputs b = inputs(32, 5, 6);
  b.state = a.state, b.beta = a.beta, b.log_decay = a.log_decay;
  const auto copy_real = [&](std::vector<float>& to, const std::vector<float>& from, int64_t d) {
    std::copy(from.begin(), from.begin() + 5 * kHeads * d, to.begin());
  };
  copy_real(b.q, a.q, kDk);
  copy_real(b.k, a.k, kDk);
  copy_real(b.v, a.v, kDv);
  const auto [out_a, state_a] = run(a, 32);
  const auto [out_b, state_b] = run(b, 32);
  CHECK(state_a == state_b);
  CHECK(std::vector<float>(out_a.begin(), out_a.begin() + 5 * kHeads * kDv) ==
        std::vector<float>(out_b.begin(), out_b.begin() + 5 * kHeads * kDv));
}

TEST_CASE("delta_scan: a clear error for shapes it does not take") {
  const DeviceFeatures gfx = device_features("NULL:gfx1100");
  CHECK(select(gfx, delta_scan_needs(32, 128, 128)));
  CHECK(!select(gfx, delta_scan_needs(32, 256, 128)));  // q and k of 32 rows exceed 64 KiB of LDS
  CHECK(select(gfx, delta_scan_needs(16, 256, 128)));
  CHECK(!delta_scan_needs(1, 128, 2048));  // d_v past a workgroup's work-items
  CHECK_THROWS_WITH_AS(delta_scan_kernel(32, 2, 64, 2000, 100), doctest::Contains("d_v 2000"),
                       Error);
}
