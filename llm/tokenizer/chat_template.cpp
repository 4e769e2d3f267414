#include "llm/tokenizer/chat_template.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "base/quote.h"
#include "llm/tokenizer/utf8.h"

namespace ugrad::llm {

namespace {

constexpr std::string_view kImStart = "<|im_start|>";
constexpr std::string_view kImEnd = "<|im_end|>\n";
constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kEmptyThink = "<think>\n\n</think>\n\n";

// Python str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string_view lstrip_newlines(std::string_view s) {
  s.remove_prefix(std::min(s.find_first_not_of('\n'), s.size()));
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  const size_t last = s.find_last_not_of('\n');
  return last == std::string_view::npos ? std::string_view{} : s.substr(0, last + 1);
}
std::string_view strip_newlines(std::string_view s) { return rstrip_newlines(lstrip_newlines(s)); }

// Python str.isspace() for one code point (Jinja's `trim` is Python's str.strip()).
bool is_python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Jinja `|trim`: strips Unicode whitespace at both ends.
std::string_view trim(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const Utf8Step step = utf8_step(s, begin);
    if (step.kind != Utf8Step::kComplete || !is_python_space(step.codepoint)) break;
    begin += step.len;
  }
  size_t end = s.size();
  while (end > begin) {
    size_t start = end - 1;  // back up to the lead byte of the last character
    while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    const Utf8Step step = utf8_step(s, start);
    if (step.kind != Utf8Step::kComplete || start + step.len != end ||
        !is_python_space(step.codepoint)) {
      break;
    }
    end = start;
  }
  return s.substr(begin, end - begin);
}

bool is_tool_response(std::string_view content) {
  return content.starts_with("<tool_response>") && content.ends_with("</tool_response>");
}

// The templates' split of an assistant message into reasoning and answer:
//   content   = content.split('</think>')[-1].lstrip('\n')
//   reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
struct Reasoned {
  std::string_view reasoning, answer;
};
Reasoned split_reasoning(std::string_view content) {
  const size_t first_close = content.find(kThinkClose);
  if (first_close == std::string_view::npos) return {{}, content};
  const size_t last_close = content.rfind(kThinkClose);
  std::string_view answer = lstrip_newlines(content.substr(last_close + kThinkClose.size()));
  std::string_view before = rstrip_newlines(content.substr(0, first_close));
  const size_t open = before.rfind(kThinkOpen);
  if (open != std::string_view::npos) before.remove_prefix(open + kThinkOpen.size());
  return {lstrip_newlines(before), answer};
}

void open_turn(std::string& out, std::string_view role) {
  out += kImStart;
  out += role;
  out += '\n';
}

void tool_response(std::string& out, std::span<const ChatMessage> messages, size_t i,
                   std::string_view content, bool open_user) {
  if (open_user) out += "<|im_start|>user";
  out += "\n<tool_response>\n";
  out += content;
  out += "\n</tool_response>";
  if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += kImEnd;
}

[[noreturn]] void unknown_role(size_t i, std::string_view role) {
  fail("chat template: message {} has role {}; expected system, user, assistant or tool", i,
       quote(role));
}

std::string format_qwen3(std::span<const ChatMessage> messages, const ChatOptions& options) {
  std::string out;
  if (messages[0].role == "system") {
    open_turn(out, "system");
    out += messages[0].content;
    out += kImEnd;
  }
  // The last user message that is a real query (not a wrapped tool response).
  size_t last_query = messages.size() - 1;
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user" && !is_tool_response(messages[i].content)) {
      last_query = i;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool last = i + 1 == messages.size();
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      open_turn(out, m.role);
      out += m.content;
      out += kImEnd;
    } else if (m.role == "system") {
      continue;  // rendered above
    } else if (m.role == "assistant") {
      const Reasoned r = split_reasoning(m.content);
      open_turn(out, "assistant");
      // Reasoning is kept only for turns after the last query (a tool-calling chain).
      if (i > last_query && (last || !r.reasoning.empty())) {
        out += "<think>\n";
        out += strip_newlines(r.reasoning);
        out += "\n</think>\n\n";
        out += lstrip_newlines(r.answer);
      } else {
        out += r.answer;
      }
      out += kImEnd;
    } else if (m.role == "tool") {
      tool_response(out, messages, i, m.content, i == 0 || messages[i - 1].role != "tool");
    } else {
      unknown_role(i, m.role);
    }
  }
  if (options.add_generation_prompt) {
    open_turn(out, "assistant");
    if (!options.enable_thinking) out += kEmptyThink;
  }
  return out;
}

std::string format_qwen35(std::span<const ChatMessage> messages, const ChatOptions& options) {
  std::string out;
  if (messages[0].role == "system") {
    open_turn(out, "system");
    out += trim(messages[0].content);
    out += kImEnd;
  }
  std::optional<size_t> last_query;
  for (size_t i = messages.size(); i-- > 0;) {
    if (messages[i].role == "user" && !is_tool_response(trim(messages[i].content))) {
      last_query = i;
      break;
    }
  }
  if (!last_query) fail("chat template (Qwen3.5): no user query found in the messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const std::string_view content = trim(m.content);
    if (m.role == "system") {
      if (i != 0) fail("chat template (Qwen3.5): system message {} must be the first", i);
    } else if (m.role == "user") {
      open_turn(out, "user");
      out += content;
      out += kImEnd;
    } else if (m.role == "assistant") {
      const Reasoned r = split_reasoning(content);
      const std::string_view reasoning = trim(r.reasoning);
      open_turn(out, "assistant");
      if (i > *last_query && !reasoning.empty()) {
        out += "<think>\n";
        out += reasoning;
        out += "\n</think>\n\n";
      }
      out += r.answer;
      out += kImEnd;
    } else if (m.role == "tool") {
      // Jinja's loop.previtem is undefined for the first message: no user header then.
      tool_response(out, messages, i, content, i > 0 && messages[i - 1].role != "tool");
    } else {
      unknown_role(i, m.role);
    }
  }
  if (options.add_generation_prompt) {
    open_turn(out, "assistant");
    out += options.enable_thinking ? "<think>\n" : kEmptyThink;
  }
  return out;
}

}  // namespace

ChatTemplate chat_template_for_pre(std::string_view pre_name) {
  if (pre_name == "qwen2") return ChatTemplate::kQwen3;
  if (pre_name == "qwen35") return ChatTemplate::kQwen35;
  fail("chat template: no template known for pre-tokenizer {}", quote(pre_name));
}

std::string format_chat(ChatTemplate tmpl, std::span<const ChatMessage> messages,
                        const ChatOptions& options) {
  if (messages.empty()) fail("chat template: no messages");
  return tmpl == ChatTemplate::kQwen3 ? format_qwen3(messages, options)
                                      : format_qwen35(messages, options);
}

}  // namespace ugrad::llm
