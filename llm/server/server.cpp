#include "llm/server/server.h"

#include <csignal>
#include <ctime>
#include <mutex>
#include <random>

#include <fmt/format.h>
#include <httplib.h>

#include "base/error.h"
#include "llm/server/api.h"
#include "llm/server/chat_page.h"
#include "llm/server/generation_queue.h"

namespace ugrad::llm {
namespace {

using std::chrono::milliseconds;

// Text that is not valid UTF-8 prints as U+FFFD instead of throwing.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump(error_json(e)), "application/json");
}

// Compares without an early exit, so the time taken does not tell how much of a guess matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

// The error for a status httplib answered itself (no route, body too large, ...).
ApiError status_error(const httplib::Request& req, int status, size_t max_body) {
  switch (status) {
    case 404:
      return ApiError(404, fmt::format("no route {} {}", req.method, req.path), {}, "not_found");
    case 413:
      return ApiError(
          413, fmt::format("the request body is larger than the limit of {} bytes", max_body), {},
          "request_too_large");
    default:
      return ApiError(status, fmt::format("the request failed with HTTP status {}", status), {}, {},
                      status >= 500 ? "server_error" : "invalid_request_error");
  }
}

constexpr milliseconds kPoll{1000};  // how often a waiting stream checks that its client is there

}  // namespace

struct Server::Impl {
  ServedModel model;
  ServerOptions options;
  httplib::Server http;
  GenerationQueue queue;
  int port = -1;
  std::mutex random_mutex;
  std::mt19937_64 random{std::random_device{}()};

  Impl(ServedModel m, ServerOptions o)
      : model(std::move(m)),
        options(std::move(o)),
        queue(model.generator, model.tokenizer, options.max_waiting) {}

  uint64_t draw() {
    std::lock_guard lock(random_mutex);
    return random();
  }

  std::shared_ptr<GenerationJob> make_job(const CompletionRequest& r) {
    if (r.model != model.name)
      throw ApiError(404,
                     fmt::format("the model '{}' does not exist; this server serves '{}'", r.model,
                                 model.name),
                     "model", "model_not_found");
    auto job = std::make_shared<GenerationJob>();
    const bool chat = r.endpoint == Endpoint::kChat;
    if (chat) {
      std::string text;
      try {
        text = format_chat(model.chat_template, r.messages,
                           {true, r.enable_thinking.value_or(options.think_by_default)});
      } catch (const Error& e) {
        throw ApiError(400, e.what(), "messages");
      }
      job->prompt = model.tokenizer.encode(text, true);
      job->split_reasoning = true;
      job->starts_in_reasoning = prompt_opens_reasoning(text);
    } else if (!r.prompt_ids.empty()) {
      for (int32_t id : r.prompt_ids)
        if (id >= model.vocab_size)
          throw ApiError(
              400,
              fmt::format("token id {} is outside the vocabulary [0, {})", id, model.vocab_size),
              "prompt");
      job->prompt = r.prompt_ids;
    } else {
      job->prompt = model.tokenizer.encode(r.prompt, true);
    }
    const auto n = static_cast<int64_t>(job->prompt.size());
    if (n > model.max_context)
      throw ApiError(400,
                     fmt::format("this model's context holds {} tokens, but the {} has {} tokens",
                                 model.max_context, chat ? "conversation" : "prompt", n),
                     chat ? "messages" : "prompt", "context_length_exceeded");
    job->max_tokens = r.max_tokens.value_or(model.max_context);
    job->sampling = r.sampling;
    if (!r.seeded) job->sampling.seed = draw();
    job->stop = r.stop;
    job->ignore_eos = r.ignore_eos;
    return job;
  }

  void complete(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
    const CompletionRequest r = parse_request(endpoint, req.body);
    std::shared_ptr<GenerationJob> job = make_job(r);
    const ResponseHeader h{
        fmt::format("{}{:016x}", endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-", draw()),
        static_cast<int64_t>(std::time(nullptr)), model.name};
    if (!queue.submit(job)) {
      const auto wait = static_cast<int64_t>(queue.mean_job_seconds() + 1);
      res.set_header("Retry-After", std::to_string(wait));
      throw ApiError(429,
                     fmt::format("the server is busy: {} requests are waiting; retry in {} s",
                                 options.max_waiting, wait),
                     {}, "rate_limit_exceeded", "rate_limit_error");
    }
    if (!r.stream) {
      AnswerDelta text;
      while (!job->wait(text, kPoll)) {
      }
      if (job->error()) throw ApiError(500, *job->error(), {}, {}, "server_error");
      res.set_content(dump(completion_json(endpoint, h, job->result())), "application/json");
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, endpoint, h, usage = r.include_usage](size_t, httplib::DataSink& sink) {
          if (stream(*job, endpoint, h, usage, sink)) return true;
          job->cancel();
          return false;
        },
        [job](bool) { job->cancel(); });  // the connection is gone: nothing more to generate
  }

  // A delta chunk with llama-server's running timings (tokens so far and their rate), so that a
  // client shows tokens per second while the answer streams (an event may carry several tokens).
  static Json progress_chunk(const GenerationJob& job, Endpoint endpoint, const ResponseHeader& h,
                             const AnswerDelta& d) {
    Json chunk = delta_chunk(endpoint, h, d.reasoning, d.content, false);
    const auto [tokens, rate] = job.progress();
    chunk["timings"] = {{"predicted_n", tokens},
                        {"predicted_per_second", rate > 0 ? Json(rate) : Json(nullptr)}};
    return chunk;
  }

  // Writes the whole event stream; false when the client went away.
  static bool stream(GenerationJob& job, Endpoint endpoint, const ResponseHeader& h, bool usage,
                     httplib::DataSink& sink) {
    const auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
    const auto event = [&](const Json& j) { return write("data: " + dump(j) + "\n\n"); };
    if (endpoint == Endpoint::kChat && !event(delta_chunk(endpoint, h, {}, {}, true))) return false;
    for (bool done = false; !done;) {
      AnswerDelta d;
      done = job.wait(d, kPoll);
      // An SSE comment while nothing comes: a client that left is noticed, and its place freed.
      const bool ok =
          d.empty() ? done || write(": waiting\n\n") : event(progress_chunk(job, endpoint, h, d));
      if (!ok) return false;
    }
    if (job.error()) {
      event(error_json(ApiError(500, *job.error(), {}, {}, "server_error")));
    } else {
      event(finish_chunk(endpoint, h, job.result()));
      if (usage) event(usage_chunk(endpoint, h, job.result()));
    }
    write("data: [DONE]\n\n");
    sink.done();
    return true;
  }

  Json model_json() const {
    return {{"id", model.name},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "ugrad"},
            {"meta", {{"n_ctx", model.max_context}, {"n_vocab", model.vocab_size}}}};
  }

  // Runs a handler; an ApiError (or any other failure) becomes the JSON error response.
  template <typename F>
  httplib::Server::Handler guarded(F f) {
    return [f](const httplib::Request& req, httplib::Response& res) {
      try {
        f(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const std::exception& e) {
        send_error(res, ApiError(500, e.what(), {}, {}, "server_error"));
      }
    };
  }

  void routes() {
    http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
    });
    http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(dump({{"object", "list"}, {"data", Json::array({model_json()})}}),
                      "application/json");
    });
    http.Get(
        R"(/v1/models/(.+))", guarded([this](const httplib::Request& req, httplib::Response& res) {
          if (req.matches[1] != model.name)
            throw ApiError(404, fmt::format("the model '{}' does not exist", req.matches[1].str()),
                           "model", "model_not_found");
          res.set_content(dump(model_json()), "application/json");
        }));
    http.Post("/v1/chat/completions",
              guarded([this](const auto& req, auto& res) { complete(Endpoint::kChat, req, res); }));
    http.Post("/v1/completions", guarded([this](const auto& req, auto& res) {
                complete(Endpoint::kCompletion, req, res);
              }));
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (options.api_key.empty() || !req.path.starts_with("/v1/") ||
          same_secret(req.get_header_value("Authorization"), "Bearer " + options.api_key))
        return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, ApiError(401, "a valid API key is required (Authorization: Bearer KEY)", {},
                               "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (res.body.empty()) send_error(res, status_error(req, res.status, options.max_body_bytes));
    });
  }
};

Server::Server(ServedModel model, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {
  std::signal(SIGPIPE, SIG_IGN);  // a client that left is a failed write, not the end of us
  Impl& s = *impl_;
  s.http.set_payload_max_length(s.options.max_body_bytes);
  s.http.set_tcp_nodelay(true);  // each streamed event leaves at once (not after Nagle's ~40 ms)
  s.http.set_keep_alive_timeout(1);  // idle keep-alive connections do not hold up a stop
  // Every waiting or streaming client holds a thread; a few more answer /health and errors.
  const size_t threads = s.options.max_waiting + 5;
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.routes();
}

Server::~Server() { stop(); }

int Server::bind() {
  Impl& s = *impl_;
  const bool ok = s.options.port == 0 ? (s.port = s.http.bind_to_any_port(s.options.host)) > 0
                                      : s.http.bind_to_port(s.options.host, s.options.port);
  if (!ok)
    fail(
        "serve: cannot listen on {}:{} (the port is in use, or the host is not an address of "
        "this machine)",
        s.options.host, s.options.port);
  if (s.options.port != 0) s.port = s.options.port;
  return s.port;
}

void Server::listen() { impl_->http.listen_after_bind(); }

void Server::stop() {
  impl_->queue.cancel_all();
  impl_->http.stop();
}

int Server::port() const { return impl_->port; }

GenerationQueue::Stats Server::stats() const { return impl_->queue.stats(); }

}  // namespace ugrad::llm
