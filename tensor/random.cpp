// Random tensors from a counter-based generator: Philox-4x32-10 (Salmon et al., "Parallel Random
// Numbers: As Easy as 1, 2, 3", SC 2011). Each element's bits are a pure function of (seed, call
// number, element index), computed on the host and uploaded, so results do not depend on the
// device, the thread count or the order of evaluation. Each rand/randn/uniform call advances the
// call number; manual_seed resets it.
#include <atomic>
#include <cmath>
#include <numbers>

#include "tensor/tensor.h"
#include "tensor/tensor_impl.h"

namespace ugrad {
using namespace tensor_detail;

namespace {

// Philox-4x32 round multipliers and Weyl key increments (Random123).
constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

struct Philox {
  uint32_t c[4];
};

Philox philox4x32(Philox ctr, uint32_t k0, uint32_t k1) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    uint64_t p0 = uint64_t(kPhiloxM0) * ctr.c[0], p1 = uint64_t(kPhiloxM1) * ctr.c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32),
             lo1 = uint32_t(p1);
    ctr = {{hi1 ^ ctr.c[1] ^ k0, lo1, hi0 ^ ctr.c[3] ^ k1, lo0}};
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  return ctr;
}

std::atomic<uint64_t> g_seed{0};
std::atomic<uint64_t> g_call{0};

// `n` uniform values in [0, 1) with 24 random bits each (exact in float32), from one call's stream.
std::vector<double> uniform_stream(int64_t n) {
  uint64_t seed = g_seed.load(), call = g_call.fetch_add(1);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t block = 0; block * 4 < n; ++block) {
    Philox ctr{
        {uint32_t(block), uint32_t(uint64_t(block) >> 32), uint32_t(call), uint32_t(call >> 32)}};
    Philox r = philox4x32(ctr, uint32_t(seed), uint32_t(seed >> 32));
    for (int64_t j = 0; j < 4 && block * 4 + j < n; ++j)
      out[block * 4 + j] = static_cast<double>(r.c[j] >> 8) * 0x1p-24;
  }
  return out;
}

int64_t element_count(const std::vector<int64_t>& shape, std::string_view op) {
  check_dims(shape, op);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_float(DType t, std::string_view op) {
  if (!is_float(t) || is_weak(t)) fail("{}: dtype {} is not a float dtype", op, to_string(t));
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) {
  g_seed = seed;
  g_call = 0;
}

Tensor Tensor::rand(const std::vector<int64_t>& shape, DType dtype, const std::string& device) {
  return uniform(shape, 0.0, 1.0, dtype, device);
}

Tensor Tensor::uniform(const std::vector<int64_t>& shape, double low, double high, DType dtype,
                       const std::string& device) {
  check_float(dtype, "uniform");
  std::vector<double> v = uniform_stream(element_count(shape, "uniform"));
  for (double& x : v) x = low + (high - low) * x;
  return from_doubles(v, shape, dtype, device);
}

Tensor Tensor::randn(const std::vector<int64_t>& shape, DType dtype, const std::string& device) {
  check_float(dtype, "randn");
  int64_t n = element_count(shape, "randn");
  // Box-Muller: element i uses uniforms 2i and 2i+1; 1 - u keeps the log's argument in (0, 1].
  std::vector<double> u = uniform_stream(2 * n), v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] =
        std::sqrt(-2.0 * std::log(1.0 - u[2 * i])) * std::cos(2 * std::numbers::pi * u[2 * i + 1]);
  return from_doubles(v, shape, dtype, device);
}

}  // namespace ugrad
