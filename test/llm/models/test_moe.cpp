// moe_ffn (llm/models/moe.h) against a naive host MoE FFN in double over the reference dequantizers
// (docs/qwen.md#moe-ffn), on the experts of small qwen3moe / qwen35moe demo GGUFs in F32, Q8_0 and
// Q4_K: one row and 32 rows, with and without the shared expert, and routers with tied logits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "codegen/lower/gather_load.h"
#include "llm/config/demo_model.h"
#include "llm/models/moe.h"
#include "llm/quant/dequantize.h"
#include "schedule/schedule.h"
#include "test/llm/models/models_test_util.h"
#include "test/llm/reference/reference_math.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr uint32_t kDim = 256;  // a multiple of every block size
constexpr uint32_t kExperts = 8, kUsed = 3, kExpertFfn = 256, kSharedFfn = 256;

GgufFile demo(ModelArch arch, GgmlType type, uint64_t seed) {
  DemoModelOptions o = test::small_model(arch, type, seed);
  o.n_layers = 1;
  o.dim = kDim;
  o.n_experts = kExperts;
  o.n_experts_used = kUsed;
  o.expert_ffn_dim = kExpertFfn;
  o.shared_ffn_dim = kSharedFfn;
  return test::demo_gguf(o);
}

std::vector<float> decode(const GgufTensor* t) {
  if (!t) return {};
  std::vector<float> out(t->n_elements());
  dequantize(t->type, t->data, out);
  return out;
}

// The layer's MoE weights as f32 host arrays, row-major as the tensors: router (E, dim), gate/up
// (E, F, dim), down (E, dim, F), shared gate/up (S, dim), down (dim, S), shared gate (dim).
struct HostMoe {
  std::vector<float> router, gate, up, down, shared_gate, shared_up, shared_down, shared_gate_inp;
  int64_t k = 0;
  bool int8_shared = false;  // Q4_K shared experts round inputs to int8 (llm/kernels/linear.h)
};

HostMoe host_weights(const LayerWeights& lw, int64_t k) {
  return {decode(lw.ffn_gate_inp),
          decode(lw.ffn_gate_exps),
          decode(lw.ffn_up_exps),
          decode(lw.ffn_down_exps),
          decode(lw.ffn_gate_shexp),
          decode(lw.ffn_up_shexp),
          decode(lw.ffn_down_shexp),
          decode(lw.ffn_gate_inp_shexp),
          k,
          lw.ffn_gate_shexp && test::rounds_input_int8(lw.ffn_gate_shexp->type)};
}

double silu(double v) { return v / (1 + std::exp(-v)); }
double dot(const float* w, const double* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(w[i]) * x[i];
  return s;
}

// out += scale * down(silu(gate x) * up x) for one expert: gate/up (F, dim), down (dim, F); with
// `int8`, x and the activation rounded to int8 levels first.
void add_swiglu(const float* gate, const float* up, const float* down, int64_t ffn,
                const double* in, double scale, double* out, bool int8 = false) {
  const std::vector<double> x =
      int8 ? test::round_int8({in, kDim}) : std::vector<double>(in, in + kDim);
  std::vector<double> act(ffn);
  for (int64_t f = 0; f < ffn; ++f)
    act[f] = silu(dot(gate + f * kDim, x.data(), kDim)) * dot(up + f * kDim, x.data(), kDim);
  if (int8) act = test::round_int8(act);
  for (uint32_t d = 0; d < kDim; ++d) out[d] += scale * dot(down + d * ffn, act.data(), ffn);
}

// docs/qwen.md#moe-ffn for one token: softmax over all experts, the top k (ties: lower id), weights
// renormalised.
std::vector<double> host_moe(const HostMoe& m, const std::vector<double>& x) {
  std::vector<double> p(kExperts), out(kDim, 0.0);
  for (uint32_t e = 0; e < kExperts; ++e) p[e] = dot(m.router.data() + e * kDim, x.data(), kDim);
  const double top = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - top));
  for (double& v : p) v /= sum;
  std::vector<uint32_t> order(kExperts);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
  double total = 0;
  for (int64_t j = 0; j < m.k; ++j) total += p[order[j]];
  const size_t expert = size_t(kExpertFfn) * kDim;
  for (int64_t j = 0; j < m.k; ++j) {
    const uint32_t e = order[j];
    add_swiglu(m.gate.data() + e * expert, m.up.data() + e * expert, m.down.data() + e * expert,
               kExpertFfn, x.data(), p[e] / total, out.data());
  }
  if (!m.shared_gate.empty()) {
    const double g = 1 / (1 + std::exp(-dot(m.shared_gate_inp.data(), x.data(), kDim)));
    add_swiglu(m.shared_gate.data(), m.shared_up.data(), m.shared_down.data(), kSharedFfn, x.data(),
               g, out.data(), m.int8_shared);
  }
  return out;
}

std::vector<float> random_rows(int64_t rows, uint32_t seed) {
  std::vector<float> v(rows * kDim);
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / float(1 << 24) * 2 - 1;
  }
  return v;
}

// max |got - want| over max |want|, row by row against host_moe.
double moe_error(const MoeWeights& w, const HostMoe& host, int64_t rows, uint32_t seed) {
  std::vector<float> h = random_rows(rows, seed);
  std::vector<float> got =
      moe_ffn(w, Tensor::from_vector(h, {rows, int64_t(kDim)})).to_vector<float>();
  REQUIRE(got.size() == h.size());
  double num = 0, den = 1e-30;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> x(h.begin() + r * kDim, h.begin() + (r + 1) * kDim);
    std::vector<double> want = host_moe(host, x);
    for (uint32_t d = 0; d < kDim; ++d) {
      num = std::max(num, std::abs(got[r * kDim + d] - want[d]));
      den = std::max(den, std::abs(want[d]));
    }
  }
  return num / den;
}

struct Layer {
  GgufFile file;
  ModelConfig config;
  ModelWeights weights;
  explicit Layer(GgufFile f)
      : file(std::move(f)),
        config(ModelConfig::from_gguf(file)),
        weights(ModelWeights::from_gguf(file, config)) {}
  const LayerWeights& lw() const { return weights.layers.at(0); }
};

}  // namespace

TEST_CASE(
    "moe_ffn matches the host MoE: qwen3moe and qwen35moe, F32 / Q8_0 / Q4_K, 1 and 32 rows") {
  for (ModelArch arch : {ModelArch::kQwen3Moe, ModelArch::kQwen35Moe})
    for (GgmlType type : {GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_K}) {
      CAPTURE(arch_name(arch));
      CAPTURE(format_of(type).name);
      Layer layer(demo(arch, type, 5));
      MoeWeights w = load_moe(layer.lw(), layer.config, "CPU");
      CHECK(w.n_used == kUsed);
      CHECK(!w.shared_gate_up.linears.empty() == (arch == ModelArch::kQwen35Moe));
      HostMoe host = host_weights(layer.lw(), kUsed);
      for (int64_t rows : {1, 32}) {
        CAPTURE(rows);
        CHECK(moe_error(w, host, rows, 3) < 1e-4);
      }
    }
}

TEST_CASE("moe_ffn without the shared expert, and with k = 1 and k = E") {
  Layer layer(demo(ModelArch::kQwen35Moe, GgmlType::Q8_0, 9));
  MoeWeights w = load_moe(layer.lw(), layer.config, "CPU");
  HostMoe host = host_weights(layer.lw(), kUsed);
  w.shared_gate_up = LinearGroup{};
  w.shared_down = Linear{};
  w.shared_gate_inp = Tensor();
  host.shared_gate.clear();
  CHECK(moe_error(w, host, 32, 4) < 1e-4);
  for (int64_t k : {int64_t(1), int64_t(kExperts)}) {
    CAPTURE(k);
    w.n_used = host.k = k;
    CHECK(moe_error(w, host, 32, 5) < 1e-4);
  }
}

TEST_CASE("moe_ffn with tied router logits: the lower expert id wins") {
  Layer layer(demo(ModelArch::kQwen3Moe, GgmlType::Q4_K, 13));
  MoeWeights w = load_moe(layer.lw(), layer.config, "CPU");
  HostMoe host = host_weights(layer.lw(), kUsed);
  // Router row e = c_e * v: tokens with v.h > 0 tie experts 1, 2, 4, 7 for the top three places
  // (7 must lose); tokens with v.h < 0 pick 6, 5, then 0. Zero rows tie every expert.
  const float scale[kExperts] = {1, 3, 3, 2, 3, 0, -1, 3};
  for (bool zero : {false, true}) {
    CAPTURE(zero);
    std::vector<float> router(kExperts * kDim);
    for (uint32_t e = 0; e < kExperts; ++e)
      for (uint32_t d = 0; d < kDim; ++d)
        router[e * kDim + d] = zero ? 0.f : scale[e] * host.router[d];
    host.router = router;
    w.router = Tensor::from_vector(router, {int64_t(kExperts), int64_t(kDim)});
    CHECK(moe_error(w, host, 32, 6) < 1e-4);
  }
}

TEST_CASE("load_moe of a layer without experts is an error") {
  DemoModelOptions o;
  GgufFile file = GgufFile::from_buffer(build_demo_model(o).to_bytes());
  ModelConfig config = ModelConfig::from_gguf(file);
  ModelWeights weights = ModelWeights::from_gguf(file, config);
  CHECK_THROWS_AS(load_moe(weights.layers.at(0), config, "CPU"), Error);
}

TEST_CASE("moe_ffn kernels that read expert bytes have no loop over the experts") {
  // The experts are uint8 (Q8_0) buffers; after the gather rewrite no kernel reading one keeps a
  // range of extent E (the one-hot sum over experts became a direct load), and every such kernel
  // is a matmul (a REDUCE): the chosen experts are not dequantized into a buffer first (they were
  // while the scheduler materialized every reduce nested in another's loop, one-hot sums too).
  Layer layer(demo(ModelArch::kQwen35Moe, GgmlType::Q8_0, 21));
  MoeWeights w = load_moe(layer.lw(), layer.config, "CPU");
  Tensor h = Tensor::from_vector(random_rows(32, 1), {32, int64_t(kDim)});
  Schedule s = create_schedule({moe_ffn(w, h).node()});
  int expert_kernels = 0;
  for (const ScheduleItem& item : s.items) {
    UOp ast = gather_loads(item.ast);
    bool reads_bytes = false, loops_over_experts = false, reduces = false;
    for (const UOp& u : ast.toposort()) {
      reads_bytes = reads_bytes || (u.op() == Op::PARAM && u.dtype().base() == dtypes::uint8);
      reduces = reduces || u.op() == Op::REDUCE;
      loops_over_experts = loops_over_experts || (u.op() == Op::RANGE && u.src(0).is_const() &&
                                                  u.src(0).const_int() == kExperts);
    }
    if (!reads_bytes) continue;
    ++expert_kernels;
    CHECK_FALSE(loops_over_experts);
    CHECK(reduces);
  }
  CHECK(expert_kernels >= 2);  // gate/up and down (and the shared expert's)
}
