// Chat prompt formatting for Qwen models: the ChatML frame of the Jinja templates that ship in
// the GGUF (`tokenizer.chat_template`), implemented directly instead of by a Jinja engine.
// Qwen3: models/templates/Qwen-Qwen3-0.6B.jinja in llama.cpp; Qwen3.5: Qwen3.5-4B.jinja.
// Tool definitions, tool calls and image/video content are not supported (see the tests).
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace ugrad::llm {

/// One turn: role is "system", "user", "assistant" or "tool" (a tool result).
struct ChatMessage {
  std::string role;
  std::string content;
};

/// Which model family's template to follow.
enum class ChatTemplate {
  kQwen3,   // Qwen3 (dense and MoE, hybrid thinking)
  kQwen35,  // Qwen3.5 / 3.6
};

struct ChatOptions {
  /// Append the opening of an assistant turn for the model to continue.
  bool add_generation_prompt = true;
  /// false: the generation prompt carries an empty think block (`<think>\n\n</think>\n\n`).
  bool enable_thinking = true;
};

/// The template that goes with a vocabulary's `tokenizer.ggml.pre` name (qwen2 -> Qwen3,
/// qwen35 -> Qwen3.5); throws Error for other names.
ChatTemplate chat_template_for_pre(std::string_view pre_name);

/// Renders the conversation as the model's prompt text (special tokens written as text: encode
/// it with allow_special). Throws Error for an unknown role, no messages, or (Qwen3.5) a system
/// message that is not first or a conversation without a user query.
std::string format_chat(ChatTemplate tmpl, std::span<const ChatMessage> messages,
                        const ChatOptions& options = {});

}  // namespace ugrad::llm
