// Requests of the OpenAI API: what parses into which fields, and the table of bad requests with
// their status, parameter and code.
#include <doctest/doctest.h>

#include <string>

#include "llm/server/api.h"

using namespace ugrad::llm;

namespace {

struct BadRequest {
  Endpoint endpoint;
  std::string body;
  int status;
  std::string param, code;
};

ApiError refusal(Endpoint endpoint, const std::string& body) {
  try {
    parse_request(endpoint, body);
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("accepted: ", body);
  return ApiError(0, "");
}

}  // namespace

TEST_CASE("a chat request parses into its fields, with OpenAI's defaults") {
  const CompletionRequest r =
      parse_request(Endpoint::kChat,
                    R"({"model": "m", "messages": [{"role": "developer", "content": "be brief"},
          {"role": "user", "content": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
          {"role": "assistant", "content": null}],
          "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 7,
          "top_k": 40, "min_p": 0.05, "seed": -1, "stop": ["\n\n", "END"], "user": "ignored",
          "chat_template_kwargs": {"enable_thinking": false}})");
  CHECK(r.model == "m");
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[1].content == "hi there");
  CHECK(r.messages[2].content.empty());
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.max_tokens == 7);
  CHECK(r.sampling.temperature == 1);
  CHECK(r.sampling.top_p == 1);
  CHECK(r.sampling.top_k == 40);
  CHECK(r.sampling.min_p == doctest::Approx(0.05));
  CHECK(r.seeded);
  CHECK(r.sampling.seed == UINT64_MAX);
  CHECK(r.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(r.enable_thinking == false);

  const CompletionRequest d = parse_request(
      Endpoint::kChat, R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
          "max_completion_tokens": 3, "max_tokens": 9, "temperature": 0, "stop": "s"})");
  CHECK(d.max_tokens == 3);  // the newer field wins
  CHECK(d.sampling.temperature == 0);
  CHECK_FALSE(d.seeded);
  CHECK_FALSE(d.stream);
  CHECK(d.stop == std::vector<std::string>{"s"});
  CHECK_FALSE(d.enable_thinking.has_value());
}

TEST_CASE("a completion's prompt is text, one text in an array, or token ids") {
  CHECK(parse_request(Endpoint::kCompletion, R"({"model": "m", "prompt": "abc"})").prompt == "abc");
  CHECK(parse_request(Endpoint::kCompletion, R"({"model": "m", "prompt": ["abc"]})").prompt ==
        "abc");
  const CompletionRequest ids =
      parse_request(Endpoint::kCompletion, R"({"model": "m", "prompt": [1, 2, 3]})");
  CHECK(ids.prompt.empty());
  CHECK(ids.prompt_ids == std::vector<int32_t>{1, 2, 3});
}

TEST_CASE("bad requests are refused with OpenAI's status, parameter and code") {
  const auto chat = Endpoint::kChat;
  const auto cmpl = Endpoint::kCompletion;
  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  const BadRequest table[] = {
      {chat, "{not json", 400, "", "invalid_json"},
      {chat, "[1, 2]", 400, "", ""},
      {chat, "{" + user + "}", 400, "model", ""},
      {chat, R"({"model": 5, )" + user + "}", 400, "model", ""},
      {chat, R"({"model": "m"})", 400, "messages", ""},
      {chat, R"({"model": "m", "messages": []})", 400, "messages", ""},
      {chat, R"({"model": "m", "messages": "hi"})", 400, "messages", ""},
      {chat, R"({"model": "m", "messages": [{"content": "x"}]})", 400, "messages[0].role", ""},
      {chat, R"({"model": "m", "messages": [{"role": "wizard", "content": "x"}]})", 400,
       "messages[0].role", ""},
      {chat, R"({"model": "m", "messages": [{"role": "user", "content": 3}]})", 400,
       "messages[0].content", ""},
      {chat,
       R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", 400,
       "messages[0].content[0]", ""},
      {chat, R"({"model": "m", "temperature": "hot", )" + user + "}", 400, "temperature", ""},
      {chat, R"({"model": "m", "temperature": 2.5, )" + user + "}", 400, "temperature", ""},
      {chat, R"({"model": "m", "top_p": 0, )" + user + "}", 400, "top_p", ""},
      {chat, R"({"model": "m", "top_k": 1.5, )" + user + "}", 400, "top_k", ""},
      {chat, R"({"model": "m", "max_tokens": -1, )" + user + "}", 400, "max_tokens", ""},
      {chat, R"({"model": "m", "max_tokens": 1e30, )" + user + "}", 400, "max_tokens", ""},
      {chat, R"({"model": "m", "seed": "x", )" + user + "}", 400, "seed", ""},
      {chat, R"({"model": "m", "stream": "yes", )" + user + "}", 400, "stream", ""},
      {chat, R"({"model": "m", "stop": ["a", "b", "c", "d", "e"], )" + user + "}", 400, "stop", ""},
      {chat, R"({"model": "m", "stop": [""], )" + user + "}", 400, "stop", ""},
      {chat, R"({"model": "m", "n": 2, )" + user + "}", 400, "n", ""},
      {chat, R"({"model": "m", "logprobs": true, )" + user + "}", 400, "logprobs", ""},
      {chat, R"({"model": "m", "tools": [{"type": "function"}], )" + user + "}", 400, "tools", ""},
      {chat, R"({"model": "m", "ignore_eos": true, )" + user + "}", 400, "ignore_eos", ""},
      {cmpl, R"({"model": "m"})", 400, "prompt", ""},
      {cmpl, R"({"model": "m", "prompt": ""})", 400, "prompt", ""},
      {cmpl, R"({"model": "m", "prompt": [1, -2]})", 400, "prompt", ""},
      {cmpl, R"({"model": "m", "prompt": {"text": "x"}})", 400, "prompt", ""},
  };
  for (const BadRequest& b : table) {
    INFO(b.body);
    const ApiError e = refusal(b.endpoint, b.body);
    CHECK(e.status == b.status);
    CHECK(e.param == b.param);
    CHECK(e.code == b.code);
    CHECK(e.type == "invalid_request_error");
    const Json j = error_json(e);
    CHECK(j["error"]["message"] == e.what());
    CHECK(j["error"]["param"] == (b.param.empty() ? Json(nullptr) : Json(b.param)));
  }
}

TEST_CASE("responses and chunks carry OpenAI's fields") {
  const CompletionResult r{.reasoning = "why",
                           .content = "so",
                           .finish_reason = "stop",
                           .prompt_tokens = 10,
                           .completion_tokens = 3,
                           .cached_tokens = 4,
                           .prompt_seconds = 0.5,
                           .completion_seconds = 0.25};
  const ResponseHeader h{"chatcmpl-1", 1700000000, "m"};
  const Json c = completion_json(Endpoint::kChat, h, r);
  CHECK(c["object"] == "chat.completion");
  CHECK(c["choices"][0]["message"]["role"] == "assistant");
  CHECK(c["choices"][0]["message"]["content"] == "so");
  CHECK(c["choices"][0]["message"]["reasoning_content"] == "why");
  CHECK(c["choices"][0]["finish_reason"] == "stop");
  CHECK(c["usage"]["total_tokens"] == 13);
  CHECK(c["usage"]["prompt_tokens_details"]["cached_tokens"] == 4);
  CHECK(c["timings"]["prompt_n"] == 6);
  CHECK(c["timings"]["prompt_per_second"] == 12.0);
  CHECK(c["timings"]["predicted_per_second"] == 12.0);
  const Json t = completion_json(Endpoint::kCompletion, h, r);
  CHECK(t["object"] == "text_completion");
  CHECK(t["choices"][0]["text"] == "so");

  const Json first = delta_chunk(Endpoint::kChat, h, "", "", true);
  CHECK(first["object"] == "chat.completion.chunk");
  CHECK(first["choices"][0]["delta"] == Json{{"role", "assistant"}, {"content", ""}});
  CHECK(first["choices"][0]["finish_reason"].is_null());
  const Json mid = delta_chunk(Endpoint::kChat, h, "r", "", false);
  CHECK(mid["choices"][0]["delta"] == Json{{"reasoning_content", "r"}});
  const Json last = finish_chunk(Endpoint::kChat, h, r);
  CHECK(last["choices"][0]["delta"] == Json::object());
  CHECK(last["choices"][0]["finish_reason"] == "stop");
  const Json usage = usage_chunk(Endpoint::kChat, h, r);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["completion_tokens"] == 3);
}
