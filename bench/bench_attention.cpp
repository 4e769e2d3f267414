// Decode attention over the KV cache (llm/models/layers.h, KvCache::attend): one query row of a
// Qwen3-0.6B-shaped model (16 query heads, 8 KV heads of 128 dims, 28 layers, each its own cache:
// more bytes than the CPU caches hold) at a given context length, replayed by the JIT. Reports
// GB/s of keys and values read per step against the read bandwidth measured in the same run (the
// cache writes and the softmax kernels count in the time, not in the bytes).
//   bench_attention [context ...]   (default: 512 2048)
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "llm/models/layers.h"
#include "runtime/thread_pool.h"
#include "tensor/jit.h"
#include "tensor/tensor.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int64_t kLayers = 28, kHeads = 16, kKvHeads = 8, kHeadDim = 128;

// Seconds per step of all layers' attention for one query at position context - 1.
double time_step(int64_t context) {
  std::vector<KvCache> caches;
  for (int64_t l = 0; l < kLayers; ++l) caches.emplace_back(context, kKvHeads, kHeadDim, "CPU");
  const Chunk chunk = make_chunk(1, context);
  const Tensor start_pos(chunk.bind(context - 1, 1).start_pos, "CPU");
  TensorJit jit([&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    const Chunk bound = Chunk::from_variables(1, {in[3].node()});
    for (KvCache& c : caches) out.push_back(c.attend(in[0], in[1], in[2], bound));
    return out;
  });
  Tensor q = Tensor::rand({1, kHeads, kHeadDim}), k = Tensor::rand({1, kKvHeads, kHeadDim}),
         v = Tensor::rand({1, kKvHeads, kHeadDim});
  for (int i = 0; i < 3; ++i) jit({q, k, v, start_pos});  // eager, capture, first replay
  return bench::best_call_seconds([&] { jit({q, k, v, start_pos}); }, 0.1, 5);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> contexts{512, 2048};
  if (argc > 1) {
    contexts.clear();
    for (int i = 1; i < argc; ++i) contexts.push_back(std::stoll(argv[i]));
  }
  const int64_t cores = ThreadPool::instance().num_threads();
  const double bw = bench::read_bandwidth(int(cores));
  fmt::print("decode attention, {} layers, {} threads, read bandwidth {:.2f} GB/s\n", kLayers,
             cores, bw);
  fmt::print("{:>8} | {:>9} {:>9} {:>9}\n", "context", "step ms", "KV GB/s", "roofline");
  for (int64_t context : contexts) {
    const double s = time_step(context);
    const double bytes = double(kLayers * 2 * kKvHeads * context * kHeadDim * 2);
    fmt::print("{:>8} | {:>9.3f} {:>9.2f} {:>8.1f}%\n", context, s * 1e3, bytes / s * 1e-9,
               100 * bytes / s * 1e-9 / bw);
  }
  return 0;
}
