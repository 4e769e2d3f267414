#include "llm/server/text_stream.h"

#include <algorithm>
#include <utility>

namespace ugrad::llm {
namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

// Length of the longest suffix of `text` that is a proper prefix of `word`.
size_t partial_suffix(std::string_view text, std::string_view word) {
  for (size_t n = std::min(text.size(), word.size() - 1); n > 0; --n)
    if (text.ends_with(word.substr(0, n))) return n;
  return 0;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}

std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// Where the think tag starts after leading whitespace, or npos.
size_t after_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

}  // namespace

StopScanner::StopScanner(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopScanner::push(std::string_view piece) {
  if (stopped_) return {};
  held_ += piece;
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  size_t keep = 0;
  for (const std::string& s : stops_) keep = std::max(keep, partial_suffix(held_, s));
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopScanner::flush() { return std::exchange(held_, {}); }

std::string cut_at_stop(std::string_view text, const std::vector<std::string>& stops) {
  size_t first = text.size();
  for (const std::string& s : stops)
    if (!s.empty()) first = std::min(first, text.find(s));
  return std::string(text.substr(0, first));
}

ReasoningSplitter::ReasoningSplitter(bool starts_in_reasoning)
    : state_(starts_in_reasoning ? State::kReasoning : State::kStart) {}

AnswerDelta ReasoningSplitter::push(std::string_view piece) {
  held_ += piece;
  return run(false);
}

AnswerDelta ReasoningSplitter::flush() { return run(true); }

AnswerDelta ReasoningSplitter::run(bool end) {
  AnswerDelta out;
  for (bool progress = true; progress;) {
    progress = false;
    switch (state_) {
      case State::kStart: {
        const size_t tag = after_space(held_);
        const std::string_view rest = std::string_view(held_).substr(tag);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, tag + kOpen.size());
          state_ = State::kReasoning;
          progress = true;
        } else if (end || rest.size() >= kOpen.size() || !kOpen.starts_with(rest)) {
          state_ = State::kContent;
          progress = true;
        }
        break;
      }
      case State::kReasoning: {
        if (!reasoning_started_) held_.erase(0, held_.size() - lstrip_newlines(held_).size());
        if (const size_t close = held_.find(kClose); close != std::string::npos) {
          out.reasoning += rstrip_newlines(std::string_view(held_).substr(0, close));
          held_.erase(0, close + kClose.size());
          state_ = State::kAfterReasoning;
          progress = true;
          break;
        }
        // Hold a partial closing tag and the newlines before it (they may be stripped).
        size_t emit = held_.size();
        if (!end) {
          emit = held_.size() - partial_suffix(held_, kClose);
          while (emit > 0 && held_[emit - 1] == '\n') --emit;
        }
        out.reasoning += held_.substr(0, emit);
        held_.erase(0, emit);
        reasoning_started_ = reasoning_started_ || emit > 0;
        break;
      }
      case State::kAfterReasoning:
        held_.erase(0, held_.size() - lstrip_newlines(held_).size());
        if (!held_.empty()) {
          state_ = State::kContent;
          progress = true;
        }
        break;
      case State::kContent:
        out.content += std::exchange(held_, {});
        break;
    }
  }
  return out;
}

AnswerDelta split_answer(std::string_view text, bool starts_in_reasoning) {
  if (!starts_in_reasoning) {
    const std::string_view rest = text.substr(after_space(text));
    if (!rest.starts_with(kOpen)) return {{}, std::string(text)};
    text = rest.substr(kOpen.size());
  }
  const size_t close = text.find(kClose);
  if (close == std::string_view::npos) return {std::string(lstrip_newlines(text)), {}};
  return {std::string(rstrip_newlines(lstrip_newlines(text.substr(0, close)))),
          std::string(lstrip_newlines(text.substr(close + kClose.size())))};
}

bool prompt_opens_reasoning(std::string_view prompt_text) {
  const size_t open = prompt_text.rfind(kOpen);
  return open != std::string_view::npos && after_space(prompt_text.substr(open + kOpen.size())) ==
                                               prompt_text.size() - open - kOpen.size();
}

}  // namespace ugrad::llm
