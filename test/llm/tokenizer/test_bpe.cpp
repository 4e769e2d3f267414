// BpeTokenizer on a small hand-built vocabulary: merge order, specials, validation errors.
#include "llm/tokenizer/bpe.h"

#include <doctest/doctest.h>

#include "base/error.h"
#include "llm/tokenizer/byte_unicode.h"

namespace ugrad::llm {
namespace {

// Ids 0..255: the bytes; then the given merge results, then a control and a user-defined token.
VocabData tiny_vocab(const std::vector<std::string>& merges) {
  VocabData v;
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
    v.token_types.push_back(1);
  }
  for (const std::string& m : merges) {
    v.merges.push_back(m);
    const size_t space = m.find(' ');
    v.tokens.push_back(m.substr(0, space) + m.substr(space + 1));
    v.token_types.push_back(1);
  }
  v.tokens.push_back("<|ctl|>");
  v.token_types.push_back(3);
  v.tokens.push_back("<u>");
  v.token_types.push_back(4);
  v.tokens.push_back("<u>x");  // longer user-defined token sharing a prefix
  v.token_types.push_back(4);
  return v;
}

TEST_SUITE("tokenizer") {
  TEST_CASE("bpe: merges apply lowest rank first and leftmost first among equals") {
    // rank 0: "b c"; rank 1: "a b"; so "abc" -> "a" + "bc", not "ab" + "c".
    const BpeTokenizer tok(tiny_vocab({"b c", "a b"}));
    const TokenId a = 'a', bc = 256, ab = 257;
    CHECK(tok.encode("abc") == std::vector<TokenId>{a, bc});
    CHECK(tok.encode("ab") == std::vector<TokenId>{ab});
    // "aaa" with "a a": the left pair merges first.
    const BpeTokenizer aa(tiny_vocab({"a a"}));
    CHECK(aa.encode("aaa") == std::vector<TokenId>{256, 'a'});
    CHECK(aa.encode("aaaa") == std::vector<TokenId>{256, 256});
  }

  TEST_CASE("bpe: chains of merges and the word cache give the same ids twice") {
    const BpeTokenizer tok(tiny_vocab({"h e", "l l", "he ll", "hell o"}));
    const std::vector<TokenId> once = tok.encode("hello hello");
    CHECK(once.front() == 259);  // "hello"
    CHECK(tok.encode("hello hello") == once);
    CHECK(tok.decode(once) == "hello hello");
  }

  TEST_CASE("bpe: special tokens with longest match and allow_special") {
    const BpeTokenizer tok(tiny_vocab({}));
    const TokenId ctl = 256, u = 257, ux = 258;
    CHECK(tok.encode("<|ctl|>") == std::vector<TokenId>{ctl});
    CHECK(tok.encode("<u>x") == std::vector<TokenId>{ux});
    CHECK(tok.encode("<u>y") == std::vector<TokenId>{u, 'y'});
    CHECK(tok.encode("<|ctl|>", false).size() == 7);
    CHECK(tok.encode("<u>", false) == std::vector<TokenId>{u});
    CHECK(tok.encode("").empty());
  }

  TEST_CASE("bpe: every byte decodes to itself") {
    const BpeTokenizer tok(tiny_vocab({}));
    for (int b = 0; b < 256; ++b) {
      CHECK(tok.token_to_piece(b) == std::string(1, static_cast<char>(b)));
    }
  }

  TEST_CASE("bpe: malformed vocabularies are errors that name the culprit") {
    VocabData no_tokens;
    CHECK_THROWS_WITH_AS(BpeTokenizer{no_tokens}, doctest::Contains("empty"), Error);

    VocabData bad_type = tiny_vocab({});
    bad_type.token_types[5] = 9;
    CHECK_THROWS_WITH_AS(BpeTokenizer{bad_type}, doctest::Contains("token 5"), Error);

    VocabData short_types = tiny_vocab({});
    short_types.token_types.pop_back();
    CHECK_THROWS_WITH_AS(BpeTokenizer{short_types}, doctest::Contains("token_type"), Error);

    VocabData bad_merge = tiny_vocab({});
    bad_merge.merges.push_back("nospace");
    CHECK_THROWS_WITH_AS(BpeTokenizer{bad_merge}, doctest::Contains("merge 0"), Error);

    VocabData unknown_result = tiny_vocab({});
    unknown_result.merges.push_back("q z");
    CHECK_THROWS_WITH_AS(BpeTokenizer{unknown_result}, doctest::Contains("'q z'"), Error);

    VocabData missing_byte = tiny_vocab({});
    missing_byte.tokens[' '] = "space";
    CHECK_THROWS_WITH_AS(BpeTokenizer{missing_byte}, doctest::Contains("byte 0x20"), Error);

    VocabData not_byte_level = tiny_vocab({});
    not_byte_level.tokens[65] = "中";
    CHECK_THROWS_WITH_AS(BpeTokenizer{not_byte_level}, doctest::Contains("not byte-level"), Error);

    VocabData bad_eos = tiny_vocab({});
    bad_eos.eos_id = 100000;
    CHECK_THROWS_WITH_AS(BpeTokenizer{bad_eos}, doctest::Contains("eos_token_id 100000"), Error);

    VocabData bad_pre = tiny_vocab({});
    bad_pre.pre = "llama3";
    CHECK_THROWS_WITH_AS(BpeTokenizer{bad_pre}, doctest::Contains("llama3"), Error);
  }
}

}  // namespace
}  // namespace ugrad::llm
