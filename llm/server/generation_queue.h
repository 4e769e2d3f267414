// Generations one at a time on one model, first come first served: HTTP threads submit jobs, one
// worker thread runs them through the Generator (whose KV cache keeps the last conversation's
// prefix for the next) and turns the tokens into text as they come (stop strings, reasoning),
// and each job's client reads its text while it is generated. A job whose client went away is
// cancelled: skipped while it waits, stopped at its next token while it runs.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "llm/models/generate.h"
#include "llm/server/api.h"
#include "llm/server/text_stream.h"
#include "llm/tokenizer/bpe.h"

namespace ugrad::llm {

/// One generation: what to run (set before submit), and its output as the worker makes it.
class GenerationJob {
 public:
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  SamplingOptions sampling;
  std::vector<std::string> stop;
  bool split_reasoning = false;      // chat: a think block goes to reasoning
  bool starts_in_reasoning = false;  // the prompt opened the think block
  bool ignore_eos = false;           // end-of-generation tokens do not end it

  /// Waits up to `timeout` for text; moves what came into `out`. True once the job has finished
  /// and all its text was taken.
  bool wait(AnswerDelta& out, std::chrono::milliseconds timeout);
  /// Stops the job: the worker skips it or stops it at its next token.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  bool started() const { return started_; }
  /// Valid once wait() returned true: the counts and timings (the text went through wait()).
  const CompletionResult& result() const { return result_; }
  /// Set when the generation failed.
  const std::optional<std::string>& error() const { return error_; }
  /// Tokens generated so far, and their rate since the first (0 before two).
  std::pair<int64_t, double> progress() const;

 private:
  friend class GenerationQueue;
  void emit(const AnswerDelta& d);
  void finish();
  void count_token();

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  AnswerDelta pending_;
  int64_t tokens_ = 0;
  std::chrono::steady_clock::time_point first_token_;
  bool finished_ = false;
  std::atomic<bool> cancelled_{false}, started_{false};
  CompletionResult result_;
  std::optional<std::string> error_;
};

class GenerationQueue {
 public:
  /// At most `max_waiting` jobs wait behind the running one.
  GenerationQueue(Generator& generator, const BpeTokenizer& tokenizer, size_t max_waiting);
  /// Cancels what waits and runs, and joins the worker.
  ~GenerationQueue();
  GenerationQueue(const GenerationQueue&) = delete;
  GenerationQueue& operator=(const GenerationQueue&) = delete;

  /// Queues the job; false (nothing queued) when max_waiting jobs already wait.
  bool submit(std::shared_ptr<GenerationJob> job);
  /// Cancels every job: the waiting ones finish at once with an error, the running one at its
  /// next token.
  void cancel_all();
  /// Mean seconds of the recent jobs (0 before the first): a hint for Retry-After.
  double mean_job_seconds() const;

  /// What the queue has done so far.
  struct Stats {
    int64_t finished = 0;   // jobs that ran to their end
    int64_t cancelled = 0;  // jobs stopped or dropped because their client left (or a stop)
    int64_t tokens = 0;     // tokens generated
    size_t waiting = 0;     // jobs waiting now
  };
  Stats stats() const;

 private:
  void work();
  void run(GenerationJob& job);
  // Finishes jobs that will never run (cancelled while waiting). Holds mutex_.
  void drop_cancelled();

  Generator& generator_;
  const BpeTokenizer& tokenizer_;
  const size_t max_waiting_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<GenerationJob>> jobs_;
  std::shared_ptr<GenerationJob> running_;
  double mean_seconds_ = 0;
  Stats stats_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace ugrad::llm
