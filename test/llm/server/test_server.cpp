// `llm serve` in process: a server on an ephemeral port over a small demo model, driven by an
// HTTP client. Greedy answers are checked against the Generator run directly on the same prompt
// (the oracle), streamed text against the non-streamed text, and the queue, the API key, the
// errors and a client that leaves mid-stream against what the API promises.
#include <doctest/doctest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "llm/config/demo_model.h"
#include "llm/models/gguf_vocab.h"
#include "llm/server/api.h"
#include "llm/server/server.h"
#include "llm/server/text_stream.h"
#include "llm/tokenizer/stream_decoder.h"

using namespace ugrad::llm;
using namespace std::chrono_literals;

namespace {

constexpr const char* kKey = "test-key";
constexpr int64_t kContext = 4096;

// A demo model (synthetic vocabulary with the Qwen special tokens), its generator, and a server
// for it: one for the whole file (loading and warming up take seconds).
struct Fixture {
  std::filesystem::path path;
  GgufFile file;
  BpeTokenizer tokenizer;
  std::unique_ptr<LanguageModel> model;
  Generator generator;
  std::unique_ptr<Server> server;
  std::thread thread;

  static std::filesystem::path write_model() {
    auto p = std::filesystem::temp_directory_path() /
             ("ugrad_test_server_" + std::to_string(::getpid()) + ".gguf");
    DemoModelOptions o;
    o.dim = 128;
    o.ffn_dim = 256;
    o.head_dim = 32;
    o.weight_type = GgmlType::Q8_0;
    write_demo_model(p.string(), o);
    return p;
  }

  Fixture()
      : path(write_model()),
        file(GgufFile::open(path.string())),
        tokenizer(vocab_from_gguf(file)),
        model(load_model(file, kContext)),
        generator(*model) {
    generator.warm_up();
  }

  // The oracle: the chat's greedy answer from the generator itself, split like the server does.
  AnswerDelta greedy_chat(const std::string& user, int64_t max_tokens) {
    const ChatMessage m{"user", user};
    const std::string prompt = format_chat(ChatTemplate::kQwen3, std::span(&m, 1), {true, false});
    GenerateOptions g;
    g.max_tokens = max_tokens;
    g.is_stop = [&](int32_t t) { return tokenizer.is_end_of_generation(t); };
    GenerateResult r = generator.generate(tokenizer.encode(prompt, true), g);
    if (!r.tokens.empty() && tokenizer.is_end_of_generation(r.tokens.back())) r.tokens.pop_back();
    return split_answer(decode_text(tokenizer, r.tokens, false), false);
  }

  void start() {
    ServerOptions o;
    o.port = 0;
    o.api_key = kKey;
    o.max_waiting = 1;
    o.max_body_bytes = 1 << 20;
    o.think_by_default = false;
    server =
        std::make_unique<Server>(ServedModel{"demo", generator, tokenizer, ChatTemplate::kQwen3,
                                             kContext, model->config().vocab_size},
                                 o);
    server->bind();
    thread = std::thread([this] { server->listen(); });
  }

  ~Fixture() {
    if (server) server->stop();
    if (thread.joinable()) thread.join();
    std::filesystem::remove(path);
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

// Oracle answers are computed before the server owns the generator.
struct Oracle {
  AnswerDelta hello = fixture().greedy_chat("hello", 12);
};
Oracle& oracle() {
  static Oracle o = [] {
    Oracle answers;
    fixture().start();
    return answers;
  }();
  return o;
}

std::unique_ptr<httplib::Client> client(bool with_key = true) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", fixture().server->port());
  if (with_key) c->set_bearer_token_auth(kKey);
  c->set_read_timeout(60);
  return c;
}

Json post(const std::string& path, const Json& body, int want_status = 200) {
  auto res = client()->Post(path, body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  CHECK(res->status == want_status);
  return Json::parse(res->body);
}

Json chat_body(const std::string& user, int64_t max_tokens) {
  return {{"model", "demo"},
          {"messages", {{{"role", "user"}, {"content", user}}}},
          {"max_tokens", max_tokens},
          {"temperature", 0}};
}

// A streamed request's events: the data payloads in order ("[DONE]" included). `stop_after`
// events: the client hangs up then.
std::vector<std::string> stream_events(const std::string& path, const Json& body,
                                       size_t stop_after = SIZE_MAX, int* status = nullptr) {
  std::vector<std::string> events;
  std::string buffer;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    buffer.append(data, n);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.starts_with("data: ")) events.push_back(event.substr(6));
    }
    return events.size() < stop_after;
  };
  auto res = client()->send(req);
  if (status) *status = res ? res->status : -1;
  return events;
}

}  // namespace

TEST_CASE("health, models, the chat page and unknown routes") {
  oracle();
  auto c = client(false);
  auto health = c->Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(Json::parse(health->body)["status"] == "ok");
  auto page = c->Get("/");
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->get_header_value("Content-Type").starts_with("text/html"));
  CHECK(page->body.find("<title>ugrad chat</title>") != std::string::npos);

  auto models = client()->Get("/v1/models");
  REQUIRE(models);
  const Json m = Json::parse(models->body);
  CHECK(m["data"][0]["id"] == "demo");
  CHECK(m["data"][0]["meta"]["n_ctx"] == kContext);
  auto one = client()->Get("/v1/models/demo");
  REQUIRE(one);
  CHECK(Json::parse(one->body)["id"] == "demo");
  auto other = client()->Get("/v1/models/other");
  REQUIRE(other);
  CHECK(other->status == 404);
  CHECK(Json::parse(other->body)["error"]["code"] == "model_not_found");
  auto nowhere = client()->Get("/v2/nothing");
  REQUIRE(nowhere);
  CHECK(nowhere->status == 404);
  CHECK(Json::parse(nowhere->body)["error"]["message"] == "no route GET /v2/nothing");
}

TEST_CASE("the API key guards /v1, not /health") {
  oracle();
  auto none = client(false)->Get("/v1/models");
  REQUIRE(none);
  CHECK(none->status == 401);
  CHECK(Json::parse(none->body)["error"]["code"] == "invalid_api_key");
  auto c = client(false);
  c->set_bearer_token_auth("wrong");
  auto wrong = c->Post("/v1/chat/completions", chat_body("x", 1).dump(), "application/json");
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
}

TEST_CASE("a greedy chat answer is the generator's, streamed or not") {
  const AnswerDelta want = oracle().hello;
  const Json r = post("/v1/chat/completions", chat_body("hello", 12));
  CHECK(r["object"] == "chat.completion");
  CHECK(r["model"] == "demo");
  CHECK(r["choices"][0]["message"]["content"] == want.content);
  CHECK(r["choices"][0]["message"].value("reasoning_content", "") == want.reasoning);
  const int64_t n = r["usage"]["completion_tokens"];
  CHECK(n >= 1);
  CHECK(n <= 12);
  CHECK(r["choices"][0]["finish_reason"] == (n == 12 ? "length" : "stop"));

  Json body = chat_body("hello", 12);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const std::vector<std::string> events = stream_events("/v1/chat/completions", body);
  REQUIRE(events.size() >= 4);
  CHECK(events.back() == "[DONE]");
  const Json first = Json::parse(events[0]);
  CHECK(first["choices"][0]["delta"]["role"] == "assistant");
  std::string content, reasoning;
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    const Json delta = Json::parse(events[i])["choices"][0]["delta"];
    content += delta.value("content", "");
    reasoning += delta.value("reasoning_content", "");
  }
  CHECK(content == want.content);
  CHECK(reasoning == want.reasoning);
  // Each delta carries the tokens generated so far.
  int64_t seen = 0;
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    const int64_t n = Json::parse(events[i])["timings"]["predicted_n"];
    CHECK(n > seen);
    seen = n;
  }
  const Json finish = Json::parse(events[events.size() - 3]);
  CHECK(finish["choices"][0]["finish_reason"] == r["choices"][0]["finish_reason"]);
  CHECK(finish["timings"]["predicted_n"] == n);
  const Json usage = Json::parse(events[events.size() - 2]);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"] == n);
}

TEST_CASE("completions: token ids, ignore_eos, a stop string, and a seed") {
  oracle();
  Json body = {{"model", "demo"},
               {"prompt", {1, 2, 3}},
               {"max_tokens", 40},
               {"temperature", 0},
               {"ignore_eos", true}};
  const Json full = post("/v1/completions", body);
  CHECK(full["object"] == "text_completion");
  CHECK(full["usage"]["prompt_tokens"] == 3);
  CHECK(full["usage"]["completion_tokens"] == 40);
  CHECK(full["choices"][0]["finish_reason"] == "length");
  const std::string text = full["choices"][0]["text"];
  REQUIRE(text.size() > 8);

  // A stop string from the middle of the greedy text (two whole characters) cuts it there.
  const auto boundary = [&](size_t i) {
    while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    return i;
  };
  const size_t from = boundary(text.size() / 2);
  const std::string stop = text.substr(from, boundary(boundary(from + 1) + 1) - from);
  REQUIRE(!stop.empty());
  body["stop"] = stop;
  const Json cut = post("/v1/completions", body);
  CHECK(cut["choices"][0]["text"] == cut_at_stop(text, {stop}));
  CHECK(cut["choices"][0]["finish_reason"] == "stop");
  // The cache served the same prompt again.
  CHECK(cut["usage"]["prompt_tokens_details"]["cached_tokens"] == 2);

  // Sampling with a seed repeats itself.
  body.erase("stop");
  body["temperature"] = 1;
  body["seed"] = 1234;
  const Json a = post("/v1/completions", body);
  const Json b = post("/v1/completions", body);
  CHECK(a["choices"][0]["text"] == b["choices"][0]["text"]);
}

TEST_CASE("a conversation that continues reuses the cached prefix") {
  oracle();
  Json body = chat_body("tell me something", 8);
  const Json one = post("/v1/chat/completions", body);
  body["messages"].push_back(
      {{"role", "assistant"}, {"content", one["choices"][0]["message"]["content"]}});
  body["messages"].push_back({{"role", "user"}, {"content", "and more"}});
  const Json two = post("/v1/chat/completions", body);
  // The cache serves the tokens the two prompts share: up to the first answer, whose empty think
  // block the template drops from past turns.
  const auto tokens = [](const Json& messages, size_t n) {
    std::vector<ChatMessage> m;
    for (size_t i = 0; i < n; ++i) m.push_back({messages[i]["role"], messages[i]["content"]});
    return fixture().tokenizer.encode(format_chat(ChatTemplate::kQwen3, m, {true, false}), true);
  };
  const std::vector<int32_t> a = tokens(body["messages"], 1), b = tokens(body["messages"], 3);
  size_t shared = 0;
  while (shared < a.size() && a[shared] == b[shared]) ++shared;
  CHECK(shared > a.size() / 2);
  CHECK(two["usage"]["prompt_tokens_details"]["cached_tokens"] == shared);
  CHECK(two["usage"]["prompt_tokens"] == b.size());
}

TEST_CASE("errors that need the model: unknown model, context, vocabulary, body size") {
  oracle();
  Json body = chat_body("x", 4);
  body["model"] = "gpt-4";
  const Json unknown = post("/v1/chat/completions", body, 404);
  CHECK(unknown["error"]["code"] == "model_not_found");
  CHECK(unknown["error"]["param"] == "model");

  const Json too_long = post(
      "/v1/completions",
      {{"model", "demo"}, {"prompt", std::vector<int>(kContext + 1, 1)}, {"max_tokens", 1}}, 400);
  CHECK(too_long["error"]["code"] == "context_length_exceeded");
  CHECK(too_long["error"]["param"] == "prompt");

  const Json bad_id = post("/v1/completions",
                           {{"model", "demo"}, {"prompt", {1, 1 << 30}}, {"max_tokens", 1}}, 400);
  CHECK(bad_id["error"]["param"] == "prompt");

  const Json malformed = [] {
    auto res = client()->Post("/v1/chat/completions", "{\"model\": ", "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
    return Json::parse(res->body);
  }();
  CHECK(malformed["error"]["code"] == "invalid_json");

  auto huge = client()->Post("/v1/chat/completions", std::string(2 << 20, ' '), "application/json");
  REQUIRE(huge);
  CHECK(huge->status == 413);
  CHECK(Json::parse(huge->body)["error"]["code"] == "request_too_large");
}

TEST_CASE("a full queue answers 429, /health answers meanwhile, a client that leaves stops") {
  oracle();
  const auto before = fixture().server->stats();
  // A long generation: the client reads its first events, then the test holds it.
  std::promise<void> streaming, hang_up;
  std::shared_future<void> hang = hang_up.get_future().share();
  Json long_body = {{"model", "demo"},
                    {"prompt", "a"},
                    {"max_tokens", 3000},
                    {"ignore_eos", true},
                    {"stream", true}};
  std::thread runner([&] {
    size_t seen = 0;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = long_body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
      if (++seen == 2) {
        streaming.set_value();
        hang.wait();
        return false;  // hang up mid-stream
      }
      return true;
    };
    client()->send(req);
  });
  streaming.get_future().wait();

  // One request may wait (max_waiting 1); the next is refused.
  auto waiting = std::async(std::launch::async, [] {
    return post("/v1/completions", {{"model", "demo"}, {"prompt", "b"}, {"max_tokens", 2}});
  });
  while (fixture().server->stats().waiting == 0) std::this_thread::sleep_for(10ms);
  auto busy = client()->Post("/v1/completions",
                             Json{{"model", "demo"}, {"prompt", "c"}, {"max_tokens", 2}}.dump(),
                             "application/json");
  REQUIRE(busy);
  CHECK(busy->status == 429);
  CHECK(std::stoi(busy->get_header_value("Retry-After")) >= 1);
  CHECK(Json::parse(busy->body)["error"]["code"] == "rate_limit_exceeded");
  const auto t0 = std::chrono::steady_clock::now();
  auto health = client(false)->Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));

  hang_up.set_value();
  runner.join();
  const Json done = waiting.get();  // runs once the long one stopped
  CHECK(done["usage"]["completion_tokens"].get<int64_t>() >= 1);
  const auto after = fixture().server->stats();
  CHECK(after.cancelled == before.cancelled + 1);
  CHECK(after.tokens - before.tokens < 3000);
}
