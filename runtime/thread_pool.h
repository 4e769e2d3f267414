// A pool of persistent worker threads that CPU kernels use to run their outer loop in parallel.
//
// A dispatch splits the work into tasks (one per participant by default) that the calling thread
// and the workers claim one at a time, so the caller does a share and takes over the share of a
// worker that is slow to wake. Workers spin briefly for the next dispatch before they sleep, so
// back-to-back kernel launches (JIT replay) cost well under a microsecond of overhead. A dispatch
// allocates nothing. The first exception thrown by any participant is rethrown in the caller. A
// dispatch from inside a task (nesting), or while another thread is dispatching on the same pool,
// runs serially on the calling thread instead of waiting.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace ugrad {

class ThreadPool {
 public:
  /// The calling convention of JIT-compiled CPU kernels: each core runs its share of the outer
  /// loop.
  using RawKernel = void (*)(void** args, int64_t core_id, int64_t n_cores);

  /// A pool of `n_threads` participants: the caller plus n_threads - 1 workers. 0 means one per
  /// CPU this process may run on; a negative count or more than kMaxThreads is an Error.
  explicit ThreadPool(int64_t n_threads);
  /// Stops and joins every worker.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// The process-wide pool, created on first use with THREADS participants.
  static ThreadPool& instance();
  /// Replaces the process-wide pool with one built from the current THREADS knob (tests, tools).
  /// No other thread may be using instance() meanwhile.
  static void reset_instance();

  /// Participants in a dispatch, the caller included.
  int64_t num_threads() const { return n_threads_; }

  /// Calls fn(begin, end) on contiguous chunks covering [0, n), at most `max_chunks` of them
  /// (0 = one per participant) and never more than n. Chunk sizes differ by at most one.
  template <typename Fn>
  void parallel_for(int64_t n, Fn&& fn, int64_t max_chunks = 0);

  /// Runs kernel(args, core_id, n_cores) for every core_id in [0, n_cores), spread over the
  /// participants; n_cores = 0 means num_threads(), at most kMaxTasks.
  void run(RawKernel kernel, void** args, int64_t n_cores = 0);

  /// True on a thread that is currently running a task of some pool (a nested dispatch runs
  /// serially).
  static bool in_task();

  static constexpr int64_t kMaxThreads = 1024;
  static constexpr int64_t kMaxTasks = (int64_t{1} << 31) - 1;

 private:
  static constexpr size_t kCacheLine = 64;

  // A type-erased task: call(ctx, task_id, n_tasks) for each task id. Kept as two words so a
  // dispatch never allocates.
  struct Task {
    void (*call)(const void* ctx, int64_t task_id, int64_t n_tasks);
    const void* ctx;
  };

  void dispatch(Task task, int64_t n_tasks);
  void run_serial(Task task, int64_t n_tasks);
  void run_claimed(uint32_t seq, int64_t n_tasks);
  void worker_loop();
  void wait_for_tasks(int64_t n_tasks);
  void shutdown();

  int64_t n_threads_;
  std::vector<std::thread> workers_;

  // One dispatch at a time; a second concurrent caller runs serially.
  std::mutex dispatch_mutex_;

  // The current dispatch. generation_ = (sequence << 32) | task count, published with release
  // after task_ and claim_ are set. claim_ = (sequence << 32) | next unclaimed task: a thread takes
  // a task by compare-and-swap, so a stale thread can never take a task of a later dispatch, and
  // the caller takes the share of workers that are slow to wake. These are written together at
  // each dispatch and share a cache line; done_ and the sleep state get lines of their own.
  alignas(kCacheLine) Task task_{};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<bool> stop_{false};

  // Tasks of the current dispatch that have finished (or thrown).
  alignas(kCacheLine) std::atomic<int64_t> done_{0};
  std::atomic<bool> has_error_{false};
  std::exception_ptr error_;

  // Sleeping workers wait on wake_cv_; the caller, once it stops spinning, on done_cv_.
  alignas(kCacheLine) std::mutex wake_mutex_;
  std::condition_variable wake_cv_;
  std::atomic<int64_t> sleepers_{0};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  std::atomic<bool> caller_sleeping_{false};
};

/// Splits [0, n) into `parts` contiguous chunks whose sizes differ by at most one: the bounds of
/// chunk `index`. Safe for every n up to INT64_MAX.
inline std::pair<int64_t, int64_t> chunk_bounds(int64_t n, int64_t parts, int64_t index) {
  const int64_t base = n / parts, rem = n % parts;
  const int64_t begin = index * base + (index < rem ? index : rem);
  return {begin, begin + base + (index < rem ? 1 : 0)};
}

template <typename Fn>
void ThreadPool::parallel_for(int64_t n, Fn&& fn, int64_t max_chunks) {
  if (n <= 0) return;
  int64_t chunks = max_chunks > 0 && max_chunks < n_threads_ ? max_chunks : n_threads_;
  if (chunks > n) chunks = n;
  struct Ctx {
    std::remove_reference_t<Fn>* fn;
    int64_t n;
  } ctx{&fn, n};
  Task task{[](const void* p, int64_t task_id, int64_t n_tasks) {
              const auto* c = static_cast<const Ctx*>(p);
              auto [begin, end] = chunk_bounds(c->n, n_tasks, task_id);
              (*c->fn)(begin, end);
            },
            &ctx};
  dispatch(task, chunks);
}

}  // namespace ugrad
