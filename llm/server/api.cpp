#include "llm/server/api.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace ugrad::llm {
namespace {

// A present, non-null field, or nullptr.
const Json* field(const Json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void bad(const std::string& param, const std::string& what) {
  throw ApiError(400, fmt::format("'{}' {}", param, what), param);
}

double number(const Json& body, const char* name, double lo, double hi, double fallback) {
  const Json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_number()) bad(name, fmt::format("must be a number, not {}", v->type_name()));
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) bad(name, fmt::format("must be between {} and {}, not {}", lo, hi, x));
  return x;
}

std::optional<int64_t> integer(const Json& body, const char* name, int64_t lo, int64_t hi) {
  const Json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer())
    bad(name, fmt::format("must be an integer, not {}",
                          v->is_number() ? v->dump() : std::string(v->type_name())));
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
    bad(name, fmt::format("must be at most {}", hi));
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) bad(name, fmt::format("must be between {} and {}, not {}", lo, hi, x));
  return x;
}

bool boolean(const Json& body, const char* name, bool fallback) {
  const Json* v = field(body, name);
  if (!v) return fallback;
  if (!v->is_boolean()) bad(name, fmt::format("must be a boolean, not {}", v->type_name()));
  return v->get<bool>();
}

std::string text(const Json& v, const std::string& name) {
  if (!v.is_string()) bad(name, fmt::format("must be a string, not {}", v.type_name()));
  return v.get<std::string>();
}

// Message content: a string or an array of text parts.
std::string content_text(const Json* v, const std::string& name) {
  if (!v) return {};
  if (v->is_string()) return v->get<std::string>();
  if (!v->is_array())
    bad(name, fmt::format("must be a string or an array of parts, not {}", v->type_name()));
  std::string out;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& part = (*v)[i];
    const std::string where = fmt::format("{}[{}]", name, i);
    if (!part.is_object()) bad(where, "must be an object");
    const Json* type = field(part, "type");
    if (!type || text(*type, where + ".type") != "text")
      throw ApiError(400, fmt::format("'{}': only text content is supported", where), where);
    const Json* t = field(part, "text");
    if (!t) bad(where + ".text", "is required");
    out += text(*t, where + ".text");
  }
  return out;
}

std::vector<ChatMessage> messages(const Json& body) {
  const Json* v = field(body, "messages");
  if (!v) bad("messages", "is required");
  if (!v->is_array()) bad("messages", fmt::format("must be an array, not {}", v->type_name()));
  if (v->empty()) bad("messages", "must not be empty");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& m = (*v)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) bad(where, fmt::format("must be an object, not {}", m.type_name()));
    const Json* role = field(m, "role");
    if (!role) bad(where + ".role", "is required");
    std::string r = text(*role, where + ".role");
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      bad(where + ".role", fmt::format("must be system, developer, user, assistant or tool, not "
                                       "'{}'",
                                       r));
    if (field(m, "tool_calls")) bad(where + ".tool_calls", "is not supported");
    out.push_back({r, content_text(field(m, "content"), where + ".content")});
  }
  return out;
}

// completions' prompt: a string, an array of one string, or an array of token ids.
void prompt(const Json& body, CompletionRequest& req) {
  const Json* v = field(body, "prompt");
  if (!v) bad("prompt", "is required");
  if (v->is_string()) {
    req.prompt = v->get<std::string>();
  } else if (v->is_array() && v->size() == 1 && (*v)[0].is_string()) {
    req.prompt = (*v)[0].get<std::string>();
  } else if (v->is_array() && !v->empty() && (*v)[0].is_number()) {
    for (const Json& id : *v) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
          id.get<int64_t>() > std::numeric_limits<int32_t>::max())
        bad("prompt", "token ids must be non-negative integers");
      req.prompt_ids.push_back(id.get<int32_t>());
    }
  } else {
    bad("prompt", "must be a string, an array of one string or an array of token ids");
  }
  if (req.prompt.empty() && req.prompt_ids.empty()) bad("prompt", "must not be empty");
}

std::vector<std::string> stops(const Json& body) {
  const Json* v = field(body, "stop");
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > 4) bad("stop", "takes at most 4 sequences");
    for (const Json& s : *v) out.push_back(text(s, "stop"));
  } else {
    bad("stop", fmt::format("must be a string or an array of strings, not {}", v->type_name()));
  }
  for (const std::string& s : out)
    if (s.empty()) bad("stop", "sequences must not be empty");
  return out;
}

// Fields whose other values this server does not implement: refused, not silently ignored.
void unsupported(const Json& body) {
  if (integer(body, "n", 1, 1 << 20).value_or(1) != 1) bad("n", "must be 1 (one choice)");
  for (const char* f : {"presence_penalty", "frequency_penalty"})
    if (number(body, f, -2, 2, 0) != 0) bad(f, "is not supported (must be 0)");
  if (boolean(body, "logprobs", false) || field(body, "top_logprobs"))
    bad("logprobs", "is not supported");
  if (const Json* t = field(body, "tools"); t && !(t->is_array() && t->empty()))
    bad("tools", "are not supported");
  if (const Json* f = field(body, "response_format")) {
    const Json* type = f->is_object() ? field(*f, "type") : nullptr;
    if (!type || *type != "text") bad("response_format", "must be {\"type\": \"text\"}");
  }
}

}  // namespace

ApiError::ApiError(int status, std::string message, std::string param, std::string code,
                   std::string type)
    : std::runtime_error(std::move(message)),
      status(status),
      param(std::move(param)),
      code(std::move(code)),
      type(std::move(type)) {}

Json error_json(const ApiError& e) {
  const auto or_null = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
  return {{"error",
           {{"message", e.what()},
            {"type", e.type},
            {"param", or_null(e.param)},
            {"code", or_null(e.code)}}}};
}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body_text) {
  Json body = Json::parse(body_text, nullptr, false);
  if (body.is_discarded())
    throw ApiError(400, "the request body is not valid JSON", {}, "invalid_json");
  if (!body.is_object())
    throw ApiError(400,
                   fmt::format("the request body must be a JSON object, not {}", body.type_name()));
  CompletionRequest req;
  req.endpoint = endpoint;
  const Json* model = field(body, "model");
  if (!model) bad("model", "is required");
  req.model = text(*model, "model");
  if (endpoint == Endpoint::kChat)
    req.messages = messages(body);
  else
    prompt(body, req);
  unsupported(body);
  req.stream = boolean(body, "stream", false);
  if (const Json* o = field(body, "stream_options")) {
    if (!o->is_object()) bad("stream_options", "must be an object");
    req.include_usage = boolean(*o, "include_usage", false);
  }
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  req.max_tokens = integer(body, "max_completion_tokens", 0, kMaxInt);
  if (!req.max_tokens) req.max_tokens = integer(body, "max_tokens", 0, kMaxInt);
  req.sampling.temperature = static_cast<float>(number(body, "temperature", 0, 2, 1));
  req.sampling.top_p = static_cast<float>(number(body, "top_p", 0, 1, 1));
  if (req.sampling.top_p == 0) bad("top_p", "must be greater than 0");
  req.sampling.top_k = static_cast<int32_t>(integer(body, "top_k", 0, kMaxInt).value_or(0));
  req.sampling.min_p = static_cast<float>(number(body, "min_p", 0, 1, 0));
  if (auto seed = integer(body, "seed", std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max())) {
    req.sampling.seed = static_cast<uint64_t>(*seed);
    req.seeded = true;
  }
  req.stop = stops(body);
  req.ignore_eos = boolean(body, "ignore_eos", false);
  if (req.ignore_eos && !req.max_tokens) bad("ignore_eos", "needs max_tokens");
  if (const Json* k = field(body, "chat_template_kwargs")) {
    if (!k->is_object()) bad("chat_template_kwargs", "must be an object");
    if (field(*k, "enable_thinking")) req.enable_thinking = boolean(*k, "enable_thinking", true);
  }
  return req;
}

Json usage_json(const CompletionResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

Json timings_json(const CompletionResult& r) {
  const int64_t prompt_n = r.prompt_tokens - r.cached_tokens;
  const auto rate = [](int64_t n, double s) { return s > 0 ? Json(n / s) : Json(nullptr); };
  return {{"cache_n", r.cached_tokens},
          {"prompt_n", prompt_n},
          {"prompt_ms", r.prompt_seconds * 1e3},
          {"prompt_per_second", rate(prompt_n, r.prompt_seconds)},
          {"predicted_n", r.completion_tokens},
          {"predicted_ms", r.completion_seconds * 1e3},
          {"predicted_per_second", rate(r.completion_tokens, r.completion_seconds)}};
}

namespace {

Json envelope(Endpoint endpoint, const ResponseHeader& h, bool chunk) {
  const char* object = endpoint == Endpoint::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return {{"id", h.id},
          {"object", object},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", "ugrad"}};
}

Json message_json(const std::string& reasoning, const std::string& content) {
  Json m = Json::object();
  m["content"] = content;
  if (!reasoning.empty()) m["reasoning_content"] = reasoning;
  return m;
}

}  // namespace

Json completion_json(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r) {
  Json out = envelope(endpoint, h, false);
  Json choice = {{"index", 0}};
  if (endpoint == Endpoint::kChat) {
    Json m = {{"role", "assistant"}};
    m.update(message_json(r.reasoning, r.content));
    choice["message"] = std::move(m);
  } else {
    choice["text"] = r.content;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = r.finish_reason;
  out["choices"] = Json::array({std::move(choice)});
  out["usage"] = usage_json(r);
  out["timings"] = timings_json(r);
  return out;
}

Json delta_chunk(Endpoint endpoint, const ResponseHeader& h, const std::string& reasoning,
                 const std::string& content, bool first) {
  Json out = envelope(endpoint, h, true);
  Json choice = {{"index", 0}};
  if (endpoint == Endpoint::kChat) {
    Json delta = first ? Json{{"role", "assistant"}} : Json::object();
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    if (!content.empty() || first) delta["content"] = content;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = content;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = nullptr;
  out["choices"] = Json::array({std::move(choice)});
  return out;
}

Json finish_chunk(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r) {
  Json out = envelope(endpoint, h, true);
  Json choice = {{"index", 0}};
  if (endpoint == Endpoint::kChat)
    choice["delta"] = Json::object();
  else
    choice["text"] = "";
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = r.finish_reason;
  out["choices"] = Json::array({std::move(choice)});
  out["timings"] = timings_json(r);
  return out;
}

Json usage_chunk(Endpoint endpoint, const ResponseHeader& h, const CompletionResult& r) {
  Json out = envelope(endpoint, h, true);
  out["choices"] = Json::array();
  out["usage"] = usage_json(r);
  return out;
}

}  // namespace ugrad::llm
