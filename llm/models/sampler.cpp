#include "llm/models/sampler.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

#include "base/error.h"
#include "runtime/realize.h"
#include "tensor/jit.h"

namespace ugrad::llm {
namespace {

// murmur3_32 (Austin Appleby, MurmurHash3_x86_32): block constants and the fmix32 finalizer.
constexpr uint32_t kMurmurC1 = 0xcc9e2d51u, kMurmurC2 = 0x1b873593u, kMurmurN = 0xe6546b64u;
constexpr uint32_t kFmixM1 = 0x85ebca6bu, kFmixM2 = 0xc2b2ae35u;
constexpr uint32_t kHashBytes = 12;  // three words: seed high, step, token id
// q = p / p_max lies in [0, 1]; the bit patterns of those floats lie in [0, 2^30).
constexpr int kThresholdBits = 30;
constexpr uint64_t kStepPeriod = uint64_t{1} << 31;  // the step variable's range (it wraps)
constexpr const char* kStepVar = "sample_step";

// uint32 logical shift right and rotate left, as division and wrapping multiplication.
Tensor shr(const Tensor& x, int n) { return idiv(x, uint32_t{1} << n); }
Tensor rotl(const Tensor& x, int r) { return (x * (uint32_t{1} << r)) | shr(x, 32 - r); }

// One murmur3_32 block: word k mixed into the running hash h.
Tensor murmur_block(const Tensor& h, const Tensor& k) {
  return rotl(h ^ (rotl(k * kMurmurC1, 15) * kMurmurC2), 13) * 5 + kMurmurN;
}

Tensor murmur_finish(Tensor h) {
  h = h ^ kHashBytes;
  h = (h ^ shr(h, 16)) * kFmixM1;
  h = (h ^ shr(h, 13)) * kFmixM2;
  return h ^ shr(h, 16);
}

// The sampler's parameters, one int32 vector on the device (floats by their bits), so that one
// captured graph serves every seed and every value of the options.
enum Param : int64_t { kSeedLo, kSeedHi, kTopK, kInvTemp, kTopP, kMinP, kParams };

Tensor param(const Tensor& params, Param i, DType dtype) {
  return params.shrink({{i, i + 1}}).reshape({}).bitcast(dtype);
}

// Uniforms in (0, 1), one per token: the top 23 bits of the hash, centred in their interval
// ((v + 0.5) / 2^23 is exact in float32 and never 0 or 1).
Tensor uniforms(const Tensor& params, const Tensor& ids, const Tensor& step) {
  Tensor seed_lo = param(params, kSeedLo, dtypes::uint32);
  Tensor seed_hi = param(params, kSeedHi, dtypes::uint32);
  Tensor h = murmur_block(murmur_block(seed_lo, seed_hi), step.cast(dtypes::uint32));
  Tensor bits = shr(murmur_finish(murmur_block(h, ids)), 9);
  return (bits.cast(dtypes::float32) + 0.5) * 0x1p-23;
}

// The largest float32 bit pattern t in [0, 2^30) for which pred(t) holds; pred must be monotone
// (true up to some t, false above) and true at 0. One reduction per bit, highest first.
template <typename Pred>
Tensor bisect_threshold(const Pred& pred, const std::string& device) {
  Tensor t = Tensor::scalar(0, dtypes::int32, device);
  for (int bit = kThresholdBits - 1; bit >= 0; --bit) {
    Tensor candidate = t + (int32_t{1} << bit);
    t = pred(candidate).where(candidate, t);
  }
  return t;
}

// What shapes the graph: the values of the options live in the parameter vector.
struct GraphKey {
  std::string device;
  int64_t vocab;
  bool greedy, top_k, top_p, min_p;  // the filters in use
  bool operator<(const GraphKey& o) const {
    return std::tie(device, vocab, greedy, top_k, top_p, min_p) <
           std::tie(o.device, o.vocab, o.greedy, o.top_k, o.top_p, o.min_p);
  }
};

// The graph of one draw: the token id (int32, shape ()), or -1 when the logits hold a NaN or a
// +inf or are all -inf.
Tensor sample_graph(const Tensor& logits, const Tensor& params, const GraphKey& g,
                    const Tensor& ids, const Tensor& step) {
  const std::string& device = logits.device();
  Tensor x = logits.reshape({g.vocab});
  // NaN counts as +inf, so the max is finite exactly when the logits are usable.
  Tensor sane = x.eq(x).where(x, INFINITY);
  Tensor m = sane.max();
  Tensor usable = m.lt(INFINITY) & m.gt(-INFINITY);
  if (g.greedy) return usable.where(sane.argmax(), -1);

  // Materialized: every threshold reduction (up to ~60) compares the same bits of one exp.
  Tensor q = ((x - m) * param(params, kInvTemp, dtypes::float32)).exp().contiguous();
  Tensor q_bits = q.bitcast(dtypes::int32);
  Tensor threshold = Tensor::scalar(0, dtypes::int32, device);  // keep q_bits >= threshold
  if (g.top_k) {
    Tensor k = param(params, kTopK, dtypes::int32);
    threshold = bisect_threshold([&](const Tensor& t) { return q_bits.ge(t).sum().ge(k); }, device);
  }
  if (g.top_p) {
    auto mass = [&](const Tensor& t) { return q_bits.ge(t).where(q, 0.0f).sum(); };
    Tensor target = mass(threshold) * param(params, kTopP, dtypes::float32);
    threshold = bisect_threshold([&](const Tensor& t) { return mass(t).ge(target); }, device);
  }
  Tensor kept = q_bits.ge(threshold);
  if (g.min_p) kept = kept & q.ge(param(params, kMinP, dtypes::float32));
  // Gumbel-max in its exponential-race form: argmax(q / E), E = -log(u) ~ Exp(1), is
  // argmax(log q + Gumbel noise) and draws from q restricted to the kept tokens (q = 1 at the
  // maximum, so the winner always has a positive score and the dropped tokens' -1 never wins).
  // Materialized: argmax's max and its equality test must see the same bits.
  Tensor race = kept.where(q / -uniforms(params, ids, step).log(), -1.0f).contiguous();
  return usable.where(race.argmax(), -1);
}

// One captured graph per shape, shared by every Sampler; the mutex guards the calls too (a replay
// overwrites its output). Never destroyed: the graphs hold device buffers, and the devices may be
// gone by the time static destructors run.
std::mutex g_graphs_mutex;

TensorJit& graph_for(const GraphKey& g) {
  static auto& graphs = *new std::map<GraphKey, std::unique_ptr<TensorJit>>();
  std::unique_ptr<TensorJit>& jit = graphs[g];
  if (!jit) {
    Tensor ids = Tensor::arange(g.vocab, dtypes::uint32, g.device);
    ids.realize();
    jit = std::make_unique<TensorJit>(
        [g, ids](const std::vector<Tensor>& in) {
          Tensor token =
              sample_graph(in[0], in[1], g, ids, Tensor::from_dim(in[2].node(), g.device));
          return std::vector<Tensor>{token};
        },
        "sampler");
  }
  return *jit;
}

int32_t float_bits(float f) { return std::bit_cast<int32_t>(f); }

}  // namespace

Sampler::Sampler(SamplingOptions options, std::string device)
    : opt_(options), device_(std::move(device)) {
  validate(opt_);
}

void Sampler::validate(const SamplingOptions& o) {
  if (!(o.temperature >= 0 && std::isfinite(o.temperature)))
    fail("sampling: temperature {} is not a finite number >= 0", o.temperature);
  if (o.top_k < 0) fail("sampling: top-k {} is negative", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) fail("sampling: top-p {} is not in (0, 1]", o.top_p);
  if (!(o.min_p >= 0 && o.min_p <= 1)) fail("sampling: min-p {} is not in [0, 1]", o.min_p);
}

int32_t Sampler::draw(const Tensor& logits, int64_t step) {
  if (logits.dtype() != dtypes::float32)
    fail("sampling: logits are {}, not float32", to_string(logits.dtype()));
  const int64_t vocab = logits.numel();
  if (vocab < 1) fail("sampling: no logits");
  if (vocab > std::numeric_limits<int32_t>::max())
    fail("sampling: a vocab of {} does not fit int32 token ids", vocab);
  if (!params_.defined()) {
    // 1 / temperature, saturated: below FLT_MIN it would be inf, and 0 * inf NaN.
    const float inv_temp = opt_.temperature > 0
                               ? static_cast<float>(std::min(1.0 / opt_.temperature, 0.0 + FLT_MAX))
                               : 0.0f;
    std::vector<int32_t> p(kParams);
    p[kSeedLo] = static_cast<int32_t>(static_cast<uint32_t>(opt_.seed));
    p[kSeedHi] = static_cast<int32_t>(static_cast<uint32_t>(opt_.seed >> 32));
    p[kTopK] = opt_.top_k;
    p[kInvTemp] = float_bits(inv_temp);
    p[kTopP] = float_bits(opt_.top_p);
    p[kMinP] = float_bits(opt_.min_p);
    params_ = Tensor::from_vector(p, {kParams}, dtypes::int32, device_);
    params_.realize();
  }
  // A replay reads the buffer under the view captured first: only whole buffers are safe inputs.
  if (UOp b = realized_buffer(logits.node()); b && b.arg_as<BufferArg>().size != vocab)
    fail(
        "sampling: the {} logits are a view into a buffer of {} elements; pass a whole buffer "
        "(contiguous())",
        vocab, b.arg_as<BufferArg>().size);
  if (logits.device() != params_.device())
    fail("sampling: the logits are on {} but the sampler on {}", logits.device(), params_.device());
  const bool greedy = opt_.temperature == 0;
  GraphKey g{.device = params_.device(),
             .vocab = vocab,
             .greedy = greedy,
             .top_k = !greedy && opt_.top_k > 0 && opt_.top_k < vocab,
             .top_p = !greedy && opt_.top_p < 1,
             .min_p = !greedy && opt_.min_p > 0};
  const UOp step_var = UOp::variable(kStepVar, 0, static_cast<int64_t>(kStepPeriod - 1));
  const Tensor bound_step(
      bind_variable(step_var, static_cast<int64_t>(static_cast<uint64_t>(step) % kStepPeriod)),
      device_);
  int32_t token;
  {
    std::lock_guard lock(g_graphs_mutex);
    token = graph_for(g)({logits.reshape({1, vocab}), params_, bound_step})[0].item<int32_t>();
  }
  if (token < 0) fail("sampling: the logits hold a NaN or a +inf, or are all -inf");
  return token;
}

int32_t Sampler::sample(const Tensor& logits) { return draw(logits, step_++); }

void Sampler::warm_up(int64_t vocab) {
  Tensor zeros = Tensor::zeros({1, vocab}, dtypes::float32, device_);
  zeros.realize();
  for (int call = 0; call < 2; ++call) draw(zeros, 0);
}

std::vector<std::pair<int32_t, float>> Sampler::top_logprobs(std::span<const float> logits, int k) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double total = 0;
  for (float l : logits) total += std::exp(l - max_logit);
  const double log_z = max_logit + std::log(total);
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<std::pair<int32_t, float>> out;
  for (size_t i = 0; i < n; ++i)
    out.emplace_back(ids[i], static_cast<float>(logits[ids[i]] - log_z));
  return out;
}

}  // namespace ugrad::llm
