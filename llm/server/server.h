// `llm serve`: an OpenAI-compatible HTTP server for one model (cpp-httplib).
//
//   GET  /health                 {"status": "ok"}; answers while a generation runs
//   GET  /v1/models[/ID]         the served model
//   POST /v1/chat/completions    chat (the model's chat template), streamed as server-sent events
//   POST /v1/completions         raw text or token ids, the same
//   GET  /                       the chat page (static, built into the binary)
//
// Generations run one at a time in arrival order (generation_queue.h); a full queue answers 429
// with Retry-After. Errors are OpenAI's JSON error objects with the matching status. With an API
// key every /v1 route requires `Authorization: Bearer KEY`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "llm/models/generate.h"
#include "llm/server/generation_queue.h"
#include "llm/tokenizer/bpe.h"
#include "llm/tokenizer/chat_template.h"

namespace ugrad::llm {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: an ephemeral port (Server::port() tells which)
  std::string api_key;     // empty: no authentication
  size_t max_waiting = 8;  // requests queued behind the running one; more get 429
  size_t max_body_bytes = 8 << 20;
  bool think_by_default = true;  // chat requests without chat_template_kwargs.enable_thinking
};

/// The model a server serves: its name in the API, and what runs it (they outlive the server).
struct ServedModel {
  std::string name;
  Generator& generator;
  const BpeTokenizer& tokenizer;
  ChatTemplate chat_template;
  int64_t max_context;
  int64_t vocab_size;
};

class Server {
 public:
  Server(ServedModel model, ServerOptions options);
  ~Server();
  /// Binds the address; an Error names it when that fails. Returns the port.
  int bind();
  /// Serves until stop() (from any thread). bind() first.
  void listen();
  void stop();
  int port() const;
  /// What the generation queue has done so far.
  GenerationQueue::Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ugrad::llm
