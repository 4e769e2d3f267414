// The OpenAI-compatible API's requests and responses as data: a request body parsed and validated
// into a CompletionRequest (an ApiError with the status and OpenAI's error fields otherwise), and
// the JSON of responses, stream chunks and errors. No HTTP here (server.h) and no model.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/models/sampler.h"
#include "llm/tokenizer/chat_template.h"

namespace ugrad::llm {

using Json = nlohmann::ordered_json;

/// A request the API refuses: HTTP status, OpenAI's error type ("invalid_request_error", ...),
/// its code ("context_length_exceeded", "model_not_found", ... or empty) and the parameter at
/// fault (or empty).
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error");
  int status;
  std::string param, code, type;
};

/// {"error": {"message", "type", "param", "code"}} (param and code null when empty).
Json error_json(const ApiError& e);

enum class Endpoint { kChat, kCompletion };  // /v1/chat/completions, /v1/completions

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  std::vector<ChatMessage> messages;  // chat
  std::string prompt;                 // completions, as text ...
  std::vector<int32_t> prompt_ids;    // ... or as token ids (then prompt is empty)
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  std::optional<int64_t> max_tokens;    // absent: until the context is full
  SamplingOptions sampling;             // OpenAI's defaults: temperature 1, top_p 1
  bool seeded = false;                  // false: the server draws a seed
  std::vector<std::string> stop;        // up to 4, not empty
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  bool ignore_eos = false;  // llama-server's: generate max_tokens whatever the model says
};

/// Parses a request body for `endpoint`. Errors: malformed JSON, a body that is not an object, a
/// missing required field (model; messages or prompt), a field of the wrong type or out of range,
/// a feature not supported (n > 1, logprobs, tools, non-text content).
CompletionRequest parse_request(Endpoint endpoint, std::string_view body);

/// What one generation produced, for the response bodies.
struct CompletionResult {
  std::string reasoning, content;
  std::string finish_reason;  // "stop" or "length"
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double prompt_seconds = 0, completion_seconds = 0;
};

/// Identifies a response: its id ("chatcmpl-..." / "cmpl-..."), creation time and model name.
struct ResponseHeader {
  std::string id;
  int64_t created = 0;
  std::string model;
};

/// The non-streaming response body (chat.completion or text_completion).
Json completion_json(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r);

/// One streamed chunk with a delta (chat: the first carries the role; reasoning and content go to
/// reasoning_content / content) and no finish reason.
Json delta_chunk(Endpoint endpoint, const ResponseHeader& h, const std::string& reasoning,
                 const std::string& content, bool first);

/// The last chunk of a choice: an empty delta, the finish reason and the timings.
Json finish_chunk(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r);

/// The usage-only chunk of stream_options.include_usage (choices empty).
Json usage_chunk(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r);

/// `usage` of a response: prompt, completion and total tokens, the cached prompt tokens.
Json usage_json(const CompletionResult& r);

/// llama-server's `timings` object: prompt and generated tokens, milliseconds and tokens/s.
Json timings_json(const CompletionResult& r);

}  // namespace ugrad::llm
