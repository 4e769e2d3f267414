// Thread pool dispatch latency against a plain function call and std::thread create/join, and the
// memory planner's arena against the peak live bytes of a transformer-like schedule.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"
#include "schedule/memory_plan.h"

using namespace ugrad;
using Clock = std::chrono::steady_clock;

namespace {

// Timed repetitions; the first argument, if given, scales them (e.g. 0.1 for a quick run).
int kDispatches = 100000;
int kThreadSpawns = 5000;

struct Summary {
  double median_us, p99_us;
};

// Times `op` `reps` times individually and summarizes in microseconds.
template <typename Op>
Summary time_each(int reps, Op op) {
  std::vector<double> us(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    op();
    us[static_cast<size_t>(i)] =
        std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

// The mean of a batch, for operations too short to time one by one.
template <typename Op>
double time_batch_us(int reps, Op op) {
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) op();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
}

std::atomic<int64_t> g_sink{0};

__attribute__((noinline)) void empty_function(int64_t begin, int64_t end) { g_sink += end - begin; }

// Busy-waits `us` microseconds: a stand-in for a kernel chunk's work.
void busy_us(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

void empty_kernel(void** /*args*/, int64_t core_id, int64_t /*n_cores*/) {
  if (core_id < 0) g_sink++;
}

// A decoder-only transformer forward pass as a linear schedule of kernels, one step each; returns
// the intermediate buffers with their lifetimes. Sizes in fp32 bytes for `tokens` tokens.
std::vector<BufferLifetime> transformer_lifetimes(int layers, int64_t tokens, int64_t dim,
                                                  int64_t heads, int64_t ffn) {
  std::vector<BufferLifetime> out;
  int64_t step = 0;
  auto bytes = [](int64_t elems) { return static_cast<size_t>(elems * 4); };
  auto produce = [&](int64_t elems) {
    out.push_back({bytes(elems), 64, step, step});
    return out.size() - 1;
  };
  auto use = [&](size_t buf) { out[buf].last_step = std::max(out[buf].last_step, step); };
  size_t x = produce(tokens * dim);  // embeddings
  for (int l = 0; l < layers; ++l) {
    ++step;
    size_t h = produce(tokens * dim);  // rmsnorm
    use(x);
    size_t q = 0, k = 0, v = 0;
    for (size_t* p : {&q, &k, &v}) {  // projections
      ++step;
      *p = produce(tokens * dim);
      use(h);
    }
    ++step;
    size_t scores = produce(heads * tokens * tokens);  // q @ k^T
    use(q), use(k);
    ++step;
    size_t probs = produce(heads * tokens * tokens);  // softmax
    use(scores);
    ++step;
    size_t attn = produce(tokens * dim);  // probs @ v
    use(probs), use(v);
    ++step;
    size_t o = produce(tokens * dim);  // output projection
    use(attn);
    ++step;
    size_t x2 = produce(tokens * dim);  // residual add
    use(x), use(o);
    ++step;
    size_t h2 = produce(tokens * dim);  // rmsnorm
    use(x2);
    ++step;
    size_t gate = produce(tokens * ffn);
    use(h2);
    ++step;
    size_t up = produce(tokens * ffn);
    use(h2);
    ++step;
    size_t act = produce(tokens * ffn);  // silu(gate) * up
    use(gate), use(up);
    ++step;
    size_t down = produce(tokens * dim);
    use(act);
    ++step;
    x = produce(tokens * dim);  // residual add
    use(x2), use(down);
  }
  ++step;
  use(x);  // the final norm reads the last residual
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const double scale = std::atof(argv[1]);
    if (!(scale > 0 && scale <= 100)) {
      fmt::print(stderr, "usage: bench_thread_pool [repetition scale in (0, 100]], got '{}'\n",
                 argv[1]);
      return 2;
    }
    kDispatches = std::max(100, static_cast<int>(kDispatches * scale));
    kThreadSpawns = std::max(100, static_cast<int>(kThreadSpawns * scale));
  }
  ThreadPool& pool = ThreadPool::instance();
  const int64_t threads = pool.num_threads();
  fmt::print("thread pool: {} participants (THREADS knob; caller included), {} hardware threads\n",
             threads, std::thread::hardware_concurrency());
  // Dispatch latency depends on whether the workers have cores to themselves: show the load.
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    double load1 = 0;
    if (std::fscanf(f, "%lf", &load1) == 1) fmt::print("load average (1 min): {:.2f}\n", load1);
    std::fclose(f);
  }

  // Warm up: wake the workers and fault in the code paths.
  for (int i = 0; i < 1000; ++i) pool.parallel_for(threads, empty_function);

  void (*volatile call)(int64_t, int64_t) = empty_function;
  const Summary call_each = time_each(kDispatches, [&] { call(0, 1); });
  const double call_batch = time_batch_us(kDispatches, [&] { call(0, 1); });
  const Summary pf = time_each(kDispatches, [&] { pool.parallel_for(threads, empty_function); });
  const double pf_batch =
      time_batch_us(kDispatches, [&] { pool.parallel_for(threads, empty_function); });
  const Summary raw = time_each(kDispatches, [&] { pool.run(empty_kernel, nullptr); });
  const double raw_batch = time_batch_us(kDispatches, [&] { pool.run(empty_kernel, nullptr); });
  const Summary spawn = time_each(kThreadSpawns, [&] {
    std::vector<std::thread> ts;
    for (int64_t t = 1; t < threads; ++t) ts.emplace_back([t] { empty_function(0, t); });
    empty_function(0, 0);
    for (auto& t : ts) t.join();
  });

  fmt::print(
      "\ndispatch latency of an empty task over {} participants (median / p99 of {} timed one by "
      "one; mean of a back-to-back batch)\n",
      threads, kDispatches);
  fmt::print("  {:<34} {:>9} {:>9} {:>10}\n", "", "median us", "p99 us", "batch us");
  auto row = [](const char* name, Summary s, double batch) {
    fmt::print("  {:<34} {:>9.3f} {:>9.3f} {:>10.3f}\n", name, s.median_us, s.p99_us, batch);
  };
  row("plain function call (baseline)", call_each, call_batch);
  row("pool.parallel_for", pf, pf_batch);
  row("pool.run (raw kernel)", raw, raw_batch);
  fmt::print("  {:<34} {:>9.3f} {:>9.3f} {:>10}   ({} spawns)\n",
             "std::thread create+join (baseline)", spawn.median_us, spawn.p99_us, "-",
             kThreadSpawns);
  fmt::print("  ratio thread create+join / parallel_for (median): {:.1f}x\n",
             spawn.median_us / pf.median_us);

  // A forced hand-off: every chunk waits until all have started, so each dispatch really runs on
  // every participant. Measures how fast an idle (spinning) worker picks up a dispatch.
  const Summary handoff = time_each(kDispatches / 10, [&] {
    std::atomic<int64_t> started{0};
    pool.parallel_for(threads, [&](int64_t, int64_t) {
      started++;
      while (started.load() < threads) std::this_thread::yield();
    });
  });
  fmt::print("  {:<34} {:>9.3f} {:>9.3f} {:>10}   (every participant runs a chunk)\n",
             "pool.parallel_for, forced hand-off", handoff.median_us, handoff.p99_us, "-");

  // Chunks with real work: how close a dispatch gets to the ideal (one chunk's time), and how many
  // chunks the workers ran (the rest the caller took over).
  fmt::print("\n{} chunks of fixed busy work per dispatch (median of {})\n", threads,
             kDispatches / 50);
  const std::thread::id caller = std::this_thread::get_id();
  for (double work_us : {2.0, 20.0, 200.0}) {
    std::atomic<int64_t> on_workers{0};
    const Summary s = time_each(kDispatches / 50, [&] {
      pool.parallel_for(threads, [&](int64_t, int64_t) {
        busy_us(work_us);
        if (std::this_thread::get_id() != caller) on_workers++;
      });
    });
    fmt::print(
        "  {:>6.1f} us per chunk: {:>8.2f} us per dispatch (serial {:>8.2f}, ideal {:>6.1f}), "
        "speedup {:.2f}x, {:.0f}% of chunks on workers\n",
        work_us, s.median_us, work_us * threads, work_us, work_us * threads / s.median_us,
        100.0 * static_cast<double>(on_workers.load()) / (kDispatches / 50.0 * threads));
  }

  fmt::print("\nmemory plan, decoder forward (fp32, 64-byte alignment)\n");
  struct Config {
    const char* name;
    int layers;
    int64_t tokens, dim, heads, ffn;
  };
  for (const Config& c : {Config{"qwen3-0.6B-like, 512 tokens", 28, 512, 1024, 16, 3072},
                          Config{"qwen3-0.6B-like, 32 tokens", 28, 32, 1024, 16, 3072},
                          Config{"small, 128 tokens", 4, 128, 256, 4, 1024}}) {
    const auto buffers = transformer_lifetimes(c.layers, c.tokens, c.dim, c.heads, c.ffn);
    const auto t0 = Clock::now();
    const MemoryPlan plan = plan_memory(buffers);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    size_t total = 0;
    for (auto& b : buffers) total += b.size;
    const size_t lower = peak_live_bytes(buffers);
    fmt::print(
        "  {:<28} {:>4} buffers: arena {:>8.2f} MiB, peak live {:>8.2f} MiB (ratio {:.3f}), no "
        "reuse {:>9.2f} MiB, planned in {:.2f} ms\n",
        c.name, buffers.size(), plan.arena_size / 1048576.0, lower / 1048576.0,
        static_cast<double>(plan.arena_size) / static_cast<double>(lower), total / 1048576.0, ms);
  }
  // Random schedules (short-lived intermediates plus a few long-lived ones): quality and planning
  // time as the buffer count grows.
  std::mt19937_64 rng(7);
  for (int n : {100, 1000, 5000}) {
    std::vector<BufferLifetime> buffers;
    for (int i = 0; i < n; ++i) {
      const int64_t first = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
      const int64_t len = rng() % 10 == 0 ? static_cast<int64_t>(rng() % 200) : rng() % 4;
      buffers.push_back({(size_t{1} << (rng() % 20)) + rng() % 4096, 64, first, first + len});
    }
    const auto t0 = Clock::now();
    const MemoryPlan plan = plan_memory(buffers);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const size_t lower = peak_live_bytes(buffers);
    fmt::print("  random, {:>5} buffers: arena / peak live {:.3f}, planned in {:.1f} ms\n", n,
               static_cast<double>(plan.arena_size) / static_cast<double>(lower), ms);
  }
  return g_sink.load() == -1;
}
