// The text of a completion as it streams: stop strings cut it, and a Qwen `<think>` block goes to
// a separate reasoning part. Both are streaming transforms that hold back only what the text so
// far cannot decide yet (a partial stop string, a partial tag, newlines that may be stripped), so
// the concatenation of what they emit equals the whole-text functions below whatever pieces the
// text arrives in.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ugrad::llm {

/// Cuts the text at the earliest occurrence of any stop string (not included in the output).
class StopScanner {
 public:
  explicit StopScanner(std::vector<std::string> stops);
  /// Appends `piece`; returns the text that is now certain to precede any stop string.
  std::string push(std::string_view piece);
  /// True once a stop string was seen: push() returns nothing more.
  bool stopped() const { return stopped_; }
  /// The text held back as a possible start of a stop string (none when stopped).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

/// The text before the first stop string.
std::string cut_at_stop(std::string_view text, const std::vector<std::string>& stops);

/// A piece of the assistant's answer: reasoning (inside the think block) and content.
struct AnswerDelta {
  std::string reasoning, content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

/// Splits generated text into reasoning and content the way the Qwen chat templates split an
/// assistant message: a `<think>` at the start (only newlines and spaces before it) opens the
/// reasoning, which ends at `</think>`; newlines at the start and end of the reasoning and at the
/// start of the content are dropped. A prompt that already opened the block (Qwen3.5's thinking
/// generation prompt ends in `<think>\n`) starts inside it. Without a think block everything is
/// content, unchanged.
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(bool starts_in_reasoning);
  AnswerDelta push(std::string_view piece);
  /// The end of the text: what was held back (an unclosed block's text stays reasoning).
  AnswerDelta flush();

 private:
  enum class State { kStart, kReasoning, kAfterReasoning, kContent };
  AnswerDelta run(bool end);
  State state_;
  std::string held_;
  bool reasoning_started_ = false;  // reasoning text emitted: newlines are no longer leading
};

/// The whole-text split (the reference the streaming form must equal).
AnswerDelta split_answer(std::string_view text, bool starts_in_reasoning);

/// True when a prompt's text ends inside an open think block.
bool prompt_opens_reasoning(std::string_view prompt_text);

}  // namespace ugrad::llm
