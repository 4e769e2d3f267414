// Chat formatting: golden strings worked out by hand from the Jinja templates
// (docs/qwen.md#chat-templates): llama.cpp models/templates/Qwen-Qwen3-0.6B.jinja (= the npm
// package's tokenizer_config.json) and models/templates/Qwen3.5-4B.jinja.
#include "llm/tokenizer/chat_template.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "base/error.h"
#include "test/llm/tokenizer/reference_data.h"

namespace ugrad::llm {
namespace {

using Messages = std::vector<ChatMessage>;

const Messages kSimple = {{"system", "You are helpful."}, {"user", "Hi"}};
const Messages kMultiTurn = {
    {"user", "Q1"}, {"assistant", "<think>\nr1\n</think>\n\nA1"}, {"user", "Q2"}};
const Messages kToolChain = {{"user", "Q"},
                             {"assistant", "<think>\nr\n</think>\n\ncall"},
                             {"tool", "res"},
                             {"tool", "res2"},
                             {"assistant", "<think>x</think>final"}};
constexpr ChatOptions kNoPrompt{.add_generation_prompt = false};
constexpr ChatOptions kNoThinking{.enable_thinking = false};

TEST_SUITE("tokenizer") {
  TEST_CASE("chat qwen3: system + user with a generation prompt with thinking on and off") {
    const std::string base =
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n";
    CHECK(format_chat(ChatTemplate::kQwen3, kSimple) == base);
    CHECK(format_chat(ChatTemplate::kQwen3, kSimple, kNoThinking) ==
          base + "<think>\n\n</think>\n\n");
    CHECK(format_chat(ChatTemplate::kQwen3, kSimple, kNoPrompt) ==
          "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  }

  TEST_CASE("chat qwen3: past turns drop their reasoning") {
    CHECK(format_chat(ChatTemplate::kQwen3, kMultiTurn) ==
          "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
          "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n");
  }

  TEST_CASE("chat qwen3: a tool-calling chain keeps reasoning after the last query") {
    CHECK(format_chat(ChatTemplate::kQwen3, kToolChain, kNoPrompt) ==
          "<|im_start|>user\nQ<|im_end|>\n"
          "<|im_start|>assistant\n<think>\nr\n</think>\n\ncall<|im_end|>\n"
          "<|im_start|>user\n<tool_response>\nres\n</tool_response>\n"
          "<tool_response>\nres2\n</tool_response><|im_end|>\n"
          "<|im_start|>assistant\n<think>\nx\n</think>\n\nfinal<|im_end|>\n");
  }

  TEST_CASE("chat qwen3: the final answer gets an empty think block and a late system is a turn") {
    CHECK(
        format_chat(ChatTemplate::kQwen3, Messages{{"user", "Q"}, {"assistant", "A"}}, kNoPrompt) ==
        "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA"
        "<|im_end|>\n");
    CHECK(format_chat(ChatTemplate::kQwen3, Messages{{"user", "a"}, {"system", "b"}}, kNoPrompt) ==
          "<|im_start|>user\na<|im_end|>\n<|im_start|>system\nb<|im_end|>\n");
    // Qwen3 keeps content as is (no trimming).
    CHECK(format_chat(ChatTemplate::kQwen3, Messages{{"user", " x \n"}}, kNoPrompt) ==
          "<|im_start|>user\n x \n<|im_end|>\n");
  }

  TEST_CASE("chat qwen3.5: thinking is opened by the generation prompt and content is trimmed") {
    const Messages simple = {{"system", " You are helpful.\n"}, {"user", "  Hi\n"}};
    const std::string base =
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n";
    CHECK(format_chat(ChatTemplate::kQwen35, simple) == base + "<think>\n");
    CHECK(format_chat(ChatTemplate::kQwen35, simple, kNoThinking) ==
          base + "<think>\n\n</think>\n\n");
  }

  TEST_CASE("chat qwen3.5: reasoning only for turns after the last query and none if empty") {
    CHECK(format_chat(ChatTemplate::kQwen35, kMultiTurn) ==
          "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
          "<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n<think>\n");
    CHECK(format_chat(ChatTemplate::kQwen35, kToolChain, kNoPrompt) ==
          "<|im_start|>user\nQ<|im_end|>\n"
          "<|im_start|>assistant\n<think>\nr\n</think>\n\ncall<|im_end|>\n"
          "<|im_start|>user\n<tool_response>\nres\n</tool_response>\n"
          "<tool_response>\nres2\n</tool_response><|im_end|>\n"
          "<|im_start|>assistant\n<think>\nx\n</think>\n\nfinal<|im_end|>\n");
    CHECK(format_chat(ChatTemplate::kQwen35, Messages{{"user", "Q"}, {"assistant", "A"}},
                      kNoPrompt) ==
          "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n");
  }

  TEST_CASE("chat: bad conversations are errors") {
    CHECK_THROWS_AS(format_chat(ChatTemplate::kQwen3, Messages{}), Error);
    CHECK_THROWS_WITH_AS(format_chat(ChatTemplate::kQwen3, Messages{{"robot", "x"}}),
                         doctest::Contains("robot"), Error);
    CHECK_THROWS_WITH_AS(
        format_chat(ChatTemplate::kQwen35, Messages{{"user", "a"}, {"system", "b"}}),
        doctest::Contains("first"), Error);
    CHECK_THROWS_WITH_AS(
        format_chat(ChatTemplate::kQwen35, Messages{{"system", "s"}, {"assistant", "a"}}),
        doctest::Contains("no user query"), Error);
    CHECK(chat_template_for_pre("qwen2") == ChatTemplate::kQwen3);
    CHECK(chat_template_for_pre("qwen35") == ChatTemplate::kQwen35);
    CHECK_THROWS_AS(chat_template_for_pre("llama3"), Error);
  }

  TEST_CASE("chat qwen3: the prompt tokenizes with its special tokens") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::vector<TokenId> ids =
        tok.encode(format_chat(ChatTemplate::kQwen3, kSimple, kNoThinking));
    // <|im_start|> system \n ... <|im_start|> assistant \n <think> \n\n </think> \n\n
    CHECK(ids.front() == 151644);
    CHECK(std::count(ids.begin(), ids.end(), 151644) == 3);
    CHECK(std::count(ids.begin(), ids.end(), 151645) == 2);
    CHECK(ids[ids.size() - 4] == 151667);
    CHECK(ids[ids.size() - 2] == 151668);
  }
}

}  // namespace
}  // namespace ugrad::llm
