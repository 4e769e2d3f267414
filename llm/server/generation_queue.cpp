#include "llm/server/generation_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "llm/tokenizer/stream_decoder.h"

namespace ugrad::llm {

bool GenerationJob::wait(AnswerDelta& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return finished_ || !pending_.empty(); });
  out.reasoning += std::exchange(pending_.reasoning, {});
  out.content += std::exchange(pending_.content, {});
  return finished_;
}

void GenerationJob::emit(const AnswerDelta& d) {
  if (d.empty()) return;
  {
    std::lock_guard lock(mutex_);
    pending_.reasoning += d.reasoning;
    pending_.content += d.content;
    result_.reasoning += d.reasoning;
    result_.content += d.content;
  }
  cv_.notify_all();
}

void GenerationJob::count_token() {
  std::lock_guard lock(mutex_);
  if (tokens_++ == 0) first_token_ = std::chrono::steady_clock::now();
}

std::pair<int64_t, double> GenerationJob::progress() const {
  std::lock_guard lock(mutex_);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - first_token_).count();
  return {tokens_, tokens_ > 1 && s > 0 ? static_cast<double>(tokens_ - 1) / s : 0.0};
}

void GenerationJob::finish() {
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  cv_.notify_all();
}

GenerationQueue::GenerationQueue(Generator& generator, const BpeTokenizer& tokenizer,
                                 size_t max_waiting)
    : generator_(generator),
      tokenizer_(tokenizer),
      max_waiting_(max_waiting),
      worker_([this] { work(); }) {}

GenerationQueue::~GenerationQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cancel_all();
  worker_.join();
}

void GenerationQueue::cancel_all() {
  {
    std::lock_guard lock(mutex_);
    for (auto& j : jobs_) j->cancel();
    if (running_) running_->cancel();
    drop_cancelled();
  }
  cv_.notify_all();
}

void GenerationQueue::drop_cancelled() {
  std::erase_if(jobs_, [this](const std::shared_ptr<GenerationJob>& j) {
    if (!j->cancelled()) return false;
    j->error_ = "cancelled before it started";
    j->finish();
    ++stats_.cancelled;
    return true;
  });
}

bool GenerationQueue::submit(std::shared_ptr<GenerationJob> job) {
  {
    std::lock_guard lock(mutex_);
    drop_cancelled();  // a client that left gives its place up
    if (stopping_ || jobs_.size() >= max_waiting_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
  return true;
}

double GenerationQueue::mean_job_seconds() const {
  std::lock_guard lock(mutex_);
  return mean_seconds_;
}

GenerationQueue::Stats GenerationQueue::stats() const {
  std::lock_guard lock(mutex_);
  Stats s = stats_;
  s.waiting = jobs_.size();
  return s;
}

void GenerationQueue::work() {
  for (;;) {
    std::shared_ptr<GenerationJob> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      drop_cancelled();
      if (stopping_ && jobs_.empty()) break;
      if (jobs_.empty()) continue;
      job = running_ = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const auto t0 = std::chrono::steady_clock::now();
    job->started_ = true;
    try {
      run(*job);
      // Cut short by a stop of the server (a client that left reads nothing): not an answer.
      if (job->cancelled()) job->error_ = "the generation was cancelled (the server is stopping)";
    } catch (const std::exception& e) {
      job->error_ = e.what();
    }
    job->finish();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(mutex_);
    running_.reset();
    mean_seconds_ = mean_seconds_ == 0 ? s : 0.8 * mean_seconds_ + 0.2 * s;
    ++(job->cancelled() ? stats_.cancelled : stats_.finished);
    stats_.tokens += job->result_.completion_tokens;
  }
}

void GenerationQueue::run(GenerationJob& job) {
  StreamDecoder decoder(tokenizer_, false);
  StopScanner stops(job.stop);
  ReasoningSplitter splitter(job.starts_in_reasoning);
  const auto emit_text = [&](const std::string& text) {
    if (job.split_reasoning)
      job.emit(splitter.push(text));
    else
      job.emit({{}, text});
  };
  bool end_token = false;
  GenerateOptions options;
  options.max_tokens = job.max_tokens;
  options.sampling = job.sampling;
  if (!job.ignore_eos)
    options.is_stop = [&](int32_t t) { return tokenizer_.is_end_of_generation(t); };
  GenerateResult r = generator_.generate(job.prompt, options, [&](int32_t t) {
    if (job.cancelled()) return false;
    job.count_token();
    if (tokenizer_.is_end_of_generation(t) && !job.ignore_eos) {
      end_token = true;
      return true;
    }
    emit_text(stops.push(decoder.push(t)));
    return !stops.stopped();
  });
  if (!stops.stopped()) emit_text(stops.push(decoder.flush()));
  emit_text(stops.flush());
  if (job.split_reasoning) job.emit(splitter.flush());
  CompletionResult& out = job.result_;
  out.finish_reason = end_token || stops.stopped() ? "stop" : "length";
  out.prompt_tokens = static_cast<int64_t>(job.prompt.size());
  out.cached_tokens = r.reused_tokens;
  out.completion_tokens = static_cast<int64_t>(r.tokens.size()) - (end_token ? 1 : 0);
  out.prompt_seconds = r.prefill_seconds;
  out.completion_seconds = r.decode_seconds;
}

}  // namespace ugrad::llm
