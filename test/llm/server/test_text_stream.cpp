// The streaming stop scanner and reasoning splitter against their whole-text references: every
// text is fed in every split into two pieces, one byte at a time, and in random pieces.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "llm/server/text_stream.h"

using namespace ugrad::llm;

namespace {

// The pieces of `text` for each way of feeding it.
std::vector<std::vector<std::string>> splits(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  for (size_t cut = 0; cut <= text.size(); ++cut)
    out.push_back({text.substr(0, cut), text.substr(cut)});
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  out.push_back(bytes);
  std::mt19937 rng(7);
  for (int r = 0; r < 20; ++r) {
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = std::uniform_int_distribution<size_t>(0, 5)(rng);
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    out.push_back(pieces);
  }
  return out;
}

const std::vector<std::string> kTexts = {
    "",
    "plain answer",
    "<think>\nreasoning here\n</think>\n\nthe answer",
    "  \n<think>a</think>b",
    "<think>\n\n\n</think>\n\n\nonly content",
    "<think>unclosed reasoning\n\n",
    "<thin",
    "<think",
    "text before <think>is content</think> too",
    "<think>a\n\n</thin</think>\nb\n\n<think>c</think>",
    "<think>\nline one\n\nline two\n</think>answer\n\n",
    "\n\n",
    "</think>stray close",
    "<think></think>",
};

}  // namespace

TEST_CASE("the reasoning splitter streams what split_answer gives, in any pieces") {
  for (bool in_reasoning : {false, true})
    for (const std::string& text : kTexts) {
      const AnswerDelta want = split_answer(text, in_reasoning);
      for (const auto& pieces : splits(text)) {
        ReasoningSplitter s(in_reasoning);
        AnswerDelta got;
        for (const std::string& p : pieces) {
          AnswerDelta d = s.push(p);
          got.reasoning += d.reasoning;
          got.content += d.content;
        }
        AnswerDelta d = s.flush();
        got.reasoning += d.reasoning;
        got.content += d.content;
        INFO("text: ", text, " in_reasoning ", in_reasoning);
        REQUIRE(got.reasoning == want.reasoning);
        REQUIRE(got.content == want.content);
      }
    }
}

TEST_CASE("split_answer follows the chat templates' split") {
  CHECK(split_answer("<think>\nwhy\n</think>\n\nso", false).reasoning == "why");
  CHECK(split_answer("<think>\nwhy\n</think>\n\nso", false).content == "so");
  CHECK(split_answer("why\n</think>\n\nso", true).reasoning == "why");
  CHECK(split_answer("no tags at all\n", false).content == "no tags at all\n");
  CHECK(split_answer("x <think>y</think>", false).content == "x <think>y</think>");
  CHECK(split_answer("<think>open", false).reasoning == "open");
}

TEST_CASE("the stop scanner streams what cut_at_stop gives, in any pieces") {
  const std::vector<std::vector<std::string>> stop_sets = {{},       {"STOP"}, {"ab", "b c"},
                                                           {"\n\n"}, {"aaa"},  {"zzz", "STO"}};
  const std::vector<std::string> texts = {
      "", "no stop here", "before STOP after", "a b c ab", "one\n\ntwo", "aaaa", "STSTOP", "STO"};
  for (const auto& stops : stop_sets)
    for (const std::string& text : texts) {
      const std::string want = cut_at_stop(text, stops);
      for (const auto& pieces : splits(text)) {
        StopScanner s(stops);
        std::string got;
        for (const std::string& p : pieces) got += s.push(p);
        const bool stopped = s.stopped();
        got += s.flush();
        INFO("text: ", text);
        REQUIRE(got == want);
        bool found = false;
        for (const std::string& st : stops) found = found || text.find(st) != std::string::npos;
        CHECK(stopped == found);
      }
    }
}

TEST_CASE("the earliest stop string wins, and it is not emitted") {
  StopScanner s({"world", "lo w"});
  CHECK(s.push("hel") == "he");  // "l" may begin "lo w"
  CHECK(s.push("lo world") == "l");
  CHECK(s.stopped());
  CHECK(s.push("more") == "");
  CHECK(cut_at_stop("hello world", {"world", "lo w"}) == "hel");
}

TEST_CASE("a prompt opens the reasoning when it ends in an open think tag") {
  CHECK(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  CHECK_FALSE(prompt_opens_reasoning("<think>\nx"));
}
