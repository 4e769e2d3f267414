#include "llm/cli/serve_command.h"

#include <pthread.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "llm/cli/hub_commands.h"
#include "llm/cli/model_path.h"
#include "llm/cli/session.h"
#include "llm/server/server.h"

namespace ugrad::llm {
namespace {

// The model's id in the API: an alias or hub name as given, a file by its name.
std::string served_name(const std::string& model) {
  return model.ends_with(".gguf") ? std::filesystem::path(model).filename().string() : model;
}

}  // namespace

int run_serve(const CliOptions& o) {
  // SIGINT and SIGTERM are taken by one thread (sigwait) that stops the server: blocked here,
  // before any thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  Session s(resolve_model_path(o.model, progress_display(o.model, false)), o, t0, false);
  // Requests sample with OpenAI's default (temperature 1) unless they say otherwise.
  Sampler({.temperature = 1}, s.model->device()).warm_up(s.model->config().vocab_size);
  ServerOptions options;
  options.host = o.host;
  options.port = o.port;
  options.api_key = o.api_key;
  options.max_waiting = static_cast<size_t>(o.max_queue);
  options.think_by_default = o.think;
  Server server({served_name(o.model), s.generator, s.tokenizer, s.chat_template(),
                 s.model->max_context(), s.model->config().vocab_size},
                options);
  const int port = server.bind();
  std::fprintf(stderr,
               "llm serve: %s on http://%s:%d (chat page at /, OpenAI API at /v1; load %.2f s, "
               "warm-up %.2f s)\n",
               served_name(o.model).c_str(), o.host.c_str(), port, s.load_seconds,
               s.warmup_seconds);
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  server.listen();
  pthread_kill(stopper.native_handle(), SIGTERM);  // wakes it when listen() ended on its own
  stopper.join();
  std::fprintf(stderr, "llm serve: stopped\n");
  return 0;
}

}  // namespace ugrad::llm
