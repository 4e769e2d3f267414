// The qwen2 / qwen35 pre-tokenizer regexes (docs/qwen.md#pre-tokenizer) on hand-checked splits.
#include "llm/tokenizer/pretokenize.h"

#include <doctest/doctest.h>

#include "base/error.h"

namespace ugrad::llm {
namespace {

std::vector<std::string> split(const PreTokenizer& pre, std::string_view text) {
  std::vector<std::string_view> views;
  pre.split(text, views);
  return {views.begin(), views.end()};
}

using Pieces = std::vector<std::string>;

TEST_SUITE("tokenizer") {
  TEST_CASE("pretokenize qwen2: words digits contractions punctuation whitespace") {
    const PreTokenizer pre("qwen2");
    CHECK(split(pre, "Hello world") == Pieces{"Hello", " world"});
    CHECK(split(pre, "12345") == Pieces{"1", "2", "3", "4", "5"});
    CHECK(split(pre, "I'm OK'LL 'Ve") == Pieces{"I", "'m", " OK", "'LL", " '", "Ve"});
    CHECK(split(pre, "don't") == Pieces{"don", "'t"});
    CHECK(split(pre, "a  b") == Pieces{"a", " ", " b"});
    CHECK(split(pre, "x   \n\ny") == Pieces{"x", "   \n\n", "y"});
    CHECK(split(pre, "end.\n\n") == Pieces{"end", ".\n\n"});
    CHECK(split(pre, "  ") == Pieces{"  "});
    CHECK(split(pre, "a, b!?") == Pieces{"a", ",", " b", "!?"});
    CHECK(split(pre, "$x") == Pieces{"$x"});  // [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading symbol
    CHECK(split(pre, "中文abc") == Pieces{"中文abc"});
    CHECK(split(pre, "٣٤") == Pieces{"٣", "٤"});  // Arabic-Indic digits are \p{N}
    CHECK(split(pre, "\xC2\xA0x") ==
          Pieces{"\xC2\xA0x"});  // NBSP is \s, but also [^\r\n\p{L}\p{N}]
    CHECK(split(pre, "").empty());
  }

  TEST_CASE("pretokenize: combining marks split in qwen2 and join letters in qwen35") {
    const PreTokenizer qwen2("qwen2"), qwen35("qwen35");
    const std::string decomposed = "cafe\xCC\x81s";                  // "cafés" with U+0301
    CHECK(split(qwen2, decomposed) == Pieces{"cafe", "\xCC\x81s"});  // mark as the prefix
    CHECK(split(qwen35, decomposed) == Pieces{decomposed});
    CHECK(split(qwen35, "नमस्ते") == Pieces{"नमस्ते"});
    CHECK(split(qwen2, "नमस्ते").size() > 1);
  }

  TEST_CASE("pretokenize: unknown names are errors") {
    CHECK_THROWS_WITH_AS(PreTokenizer("gpt4o"), doctest::Contains("gpt4o"), Error);
    CHECK(pretokenizer_regex("qwen2").find("\\p{N}|") != std::string_view::npos);
  }

  TEST_CASE("pretokenize: pieces cover the text exactly") {
    const PreTokenizer pre("qwen2");
    const std::string text = "Mixed: 42 cats\t\ton 3 mats!! 😀 中文 e\xCC\x81 'S\r\n  end";
    std::string joined;
    for (const std::string& p : split(pre, text)) {
      CHECK(!p.empty());
      joined += p;
    }
    CHECK(joined == text);
  }
}

}  // namespace
}  // namespace ugrad::llm
