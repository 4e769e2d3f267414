#include "runtime/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <system_error>

#include "base/env.h"
#include "base/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ugrad {
namespace {

// How long a worker polls for the next dispatch (and the caller for the end of one) before it
// sleeps. Long enough to bridge the gap between back-to-back kernel launches; short enough that an
// idle pool stops burning cores almost at once.
constexpr auto kSpinTime = std::chrono::microseconds(100);
// Spins of plain pause before the spinning thread starts yielding its core.
constexpr int kPauseOnlySpins = 1024;

// generation_ and claim_ hold a dispatch sequence number in their high half.
constexpr int kSeqShift = 32;
constexpr uint64_t kLowMask = (uint64_t{1} << kSeqShift) - 1;
static_assert(ThreadPool::kMaxTasks <= static_cast<int64_t>(kLowMask));

thread_local bool tl_in_task = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Sets tl_in_task for the lifetime of a task run on this thread.
struct InTaskScope {
  bool previous = tl_in_task;
  InTaskScope() { tl_in_task = true; }
  ~InTaskScope() { tl_in_task = previous; }
};

// Spins until pred() holds or kSpinTime has passed; returns whether it held. With `yield`, the
// thread gives up its core after the first few microseconds: right when waiting for a thread that
// may share that core, wrong for an idle worker (a yield to a busy process costs it a whole tick).
template <typename Pred>
bool spin_until(Pred pred, bool yield) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 63) == 63) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      if (yield && i >= kPauseOnlySpins) std::this_thread::yield();
    }
  }
}

int64_t resolve_thread_count(int64_t n_threads) {
  if (n_threads < 0 || n_threads > ThreadPool::kMaxThreads)
    fail("thread pool: thread count {} is out of range [0, {}] (THREADS=0 means one per core)",
         n_threads, ThreadPool::kMaxThreads);
  if (n_threads > 0) return n_threads;
  // The CPUs this process may run on (taskset, cgroup cpusets), not every CPU of the machine.
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) > 0)
    return std::min<int64_t>(CPU_COUNT(&cpus), ThreadPool::kMaxThreads);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : std::min<int64_t>(hw, ThreadPool::kMaxThreads);
}

std::mutex g_instance_mutex;
std::atomic<ThreadPool*> g_instance{nullptr};

// Joins the process-wide pool's workers at exit.
struct InstanceOwner {
  ~InstanceOwner() { delete g_instance.exchange(nullptr); }
} g_instance_owner;

}  // namespace

ThreadPool::ThreadPool(int64_t n_threads) : n_threads_(resolve_thread_count(n_threads)) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int64_t p = 1; p < n_threads_; ++p) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error& e) {
      shutdown();  // joins the workers started so far
      fail("thread pool: cannot start worker {} of {}: {}", p, n_threads_ - 1, e.what());
    }
  }
}

ThreadPool::~ThreadPool() { shutdown(); }

void ThreadPool::shutdown() {
  if (workers_.empty()) return;
  stop_.store(true);
  generation_.fetch_add(uint64_t{1} << kSeqShift);
  {
    std::lock_guard lock(wake_mutex_);
    wake_cv_.notify_all();
  }
  for (auto& w : workers_) w.join();
  workers_.clear();
}

ThreadPool& ThreadPool::instance() {
  if (ThreadPool* pool = g_instance.load(std::memory_order_acquire)) return *pool;
  std::lock_guard lock(g_instance_mutex);
  if (g_instance.load() == nullptr) g_instance.store(new ThreadPool(knob_int(Knob::THREADS)));
  return *g_instance.load();
}

void ThreadPool::reset_instance() {
  std::lock_guard lock(g_instance_mutex);
  auto fresh = new ThreadPool(knob_int(Knob::THREADS));
  delete g_instance.exchange(fresh);
}

bool ThreadPool::in_task() { return tl_in_task; }

void ThreadPool::run(RawKernel kernel, void** args, int64_t n_cores) {
  if (n_cores < 0 || n_cores > kMaxTasks)
    fail("thread pool: run() with n_cores = {}, outside [0, {}]", n_cores, kMaxTasks);
  if (n_cores == 0) n_cores = n_threads_;
  struct Ctx {
    RawKernel kernel;
    void** args;
  } ctx{kernel, args};
  Task task{[](const void* p, int64_t core_id, int64_t n) {
              const auto* c = static_cast<const Ctx*>(p);
              c->kernel(c->args, core_id, n);
            },
            &ctx};
  dispatch(task, n_cores);
}

void ThreadPool::run_serial(Task task, int64_t n_tasks) {
  InTaskScope scope;
  for (int64_t t = 0; t < n_tasks; ++t) task.call(task.ctx, t, n_tasks);
}

void ThreadPool::dispatch(Task task, int64_t n_tasks) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1 || tl_in_task) return run_serial(task, n_tasks);
  std::unique_lock busy(dispatch_mutex_, std::try_to_lock);
  if (!busy.owns_lock()) return run_serial(task, n_tasks);

  const auto seq =
      static_cast<uint32_t>((generation_.load(std::memory_order_relaxed) >> kSeqShift) + 1);
  task_ = task;
  has_error_.store(false, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  claim_.store(uint64_t{seq} << kSeqShift, std::memory_order_relaxed);
  generation_.store(uint64_t{seq} << kSeqShift | static_cast<uint64_t>(n_tasks));
  // Dekker pairing with worker_loop: either we see its sleeper count or it sees the new generation.
  if (sleepers_.load() > 0) {
    std::lock_guard lock(wake_mutex_);
    wake_cv_.notify_all();
  }

  run_claimed(seq, n_tasks);
  wait_for_tasks(n_tasks);
  if (has_error_.load(std::memory_order_acquire)) {
    std::exception_ptr error = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void ThreadPool::run_claimed(uint32_t seq, int64_t n_tasks) {
  InTaskScope scope;
  for (;;) {
    uint64_t claim = claim_.load(std::memory_order_acquire);
    do {
      if (claim >> kSeqShift != seq || static_cast<int64_t>(claim & kLowMask) >= n_tasks) return;
    } while (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel));
    // A claimed task keeps the dispatch (and task_) alive until it is counted done.
    try {
      task_.call(task_.ctx, static_cast<int64_t>(claim & kLowMask), n_tasks);
    } catch (...) {
      if (!has_error_.exchange(true)) error_ = std::current_exception();
    }
    // Dekker pairing with wait_for_tasks: seq_cst increment, then read the sleeping flag.
    if (done_.fetch_add(1) + 1 == n_tasks && caller_sleeping_.load()) {
      std::lock_guard lock(done_mutex_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::wait_for_tasks(int64_t n_tasks) {
  if (spin_until([&] { return done_.load(std::memory_order_acquire) == n_tasks; }, true)) return;
  std::unique_lock lock(done_mutex_);
  caller_sleeping_.store(true);
  while (done_.load() != n_tasks) done_cv_.wait(lock);
  caller_sleeping_.store(false);
}

void ThreadPool::worker_loop() {
  tl_in_task = true;  // a dispatch from inside a worker always runs serially
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = 0;
    if (!spin_until([&] { return (gen = generation_.load(std::memory_order_acquire)) != seen; },
                    false)) {
      std::unique_lock lock(wake_mutex_);
      sleepers_.fetch_add(1);
      while ((gen = generation_.load()) == seen) wake_cv_.wait(lock);
      sleepers_.fetch_sub(1);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_claimed(static_cast<uint32_t>(gen >> kSeqShift), static_cast<int64_t>(gen & kLowMask));
  }
}

}  // namespace ugrad
