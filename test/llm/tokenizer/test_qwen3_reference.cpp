// The Qwen3 vocabulary against the ids of the npm package's own JavaScript tokenizer.
#include <doctest/doctest.h>

#include <algorithm>

#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "base/error.h"
#include "llm/tokenizer/byte_unicode.h"
#include "llm/tokenizer/normalize.h"
#include "llm/tokenizer/utf8.h"
#include "test/llm/tokenizer/reference_data.h"

namespace ugrad::llm {
namespace {

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) {
    if (static_cast<uint8_t>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
    } else {
      out += c;
    }
  }
  return s.size() > 80 ? out + "..." : out;
}

TEST_SUITE("tokenizer") {
  TEST_CASE(
      "qwen3 vocabulary: shape as llama.cpp's converter writes it (docs/qwen.md#tokenizer-keys)") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK(tok.n_vocab() == 151936);
    CHECK(tok.pre_tokenizer().name() == "qwen2");
    CHECK(tok.token_id("<|endoftext|>") == 151643);
    CHECK(tok.token_id("<|im_start|>") == 151644);
    CHECK(tok.token_id("<|im_end|>") == 151645);
    CHECK(tok.token_id("<think>") == 151667);
    CHECK(tok.token_id("</think>") == 151668);
    CHECK(tok.token_type(151644) == TokenType::kControl);
    CHECK(tok.token_type(151659) == TokenType::kControl);      // <|fim_prefix|>: looks like <|…|>
    CHECK(tok.token_type(151657) == TokenType::kUserDefined);  // <tool_call>
    CHECK(tok.token_type(151667) == TokenType::kUserDefined);  // <think>
    CHECK(tok.token_type(151669) == TokenType::kUnused);       // [PAD151669]
    CHECK(tok.token_type(9707) == TokenType::kNormal);
    CHECK(tok.bos_id() == 151643);
    CHECK(tok.eos_id() == 151645);
    CHECK(tok.is_end_of_generation(151645));
    CHECK(tok.is_end_of_generation(151643));
    CHECK_FALSE(tok.is_end_of_generation(151644));
    CHECK_FALSE(tok.is_end_of_generation(9707));
  }

  TEST_CASE("qwen3 corpus: ids equal the JS tokenizer's (NFC on) and decode gives the NFC text") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK(tok.pre_tokenizer().normalizes_nfc());
    const std::vector<test::ReferenceCase> cases = test::load_qwen3_corpus_reference();
    REQUIRE(cases.size() >= 200);
    size_t mismatches = 0, nfd_cases = 0, nfkc_cases = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const test::ReferenceCase& c = cases[i];
      INFO("case ", i, ": '", printable(c.text), "'");
      const std::vector<TokenId> ids = tok.encode(c.text);
      CHECK(ids == c.ids_nfc);
      mismatches += ids != c.ids_nfc;
      CHECK(tok.decode(ids) == c.nfc);  // round trip: decode(encode(t)) == NFC(t)
      CHECK(tok.encode(c.nfc) == c.ids_nfc);
      if (c.nfc != c.text) {
        ++nfd_cases;
      } else {
        CHECK(c.ids == c.ids_nfc);  // text already in NFC: normalizing changes no id
        nfkc_cases += c.nfkc != c.text;
      }
    }
    CHECK(mismatches == 0);
    CHECK(nfd_cases >= 30);  // the corpus does exercise decomposed text
    CHECK(nfkc_cases >= 6);  // and NFC-stable text that NFKC would change (which must not happen)
  }

  TEST_CASE("qwen3: NFD text, where llama.cpp differs from the Hugging Face tokenizer") {
    // llama.cpp does not apply tokenizer.json's NFC normalizer (its ids are the JS tokenizer's with
    // the normalizer switched off); the model was trained with the Hugging Face tokenizer, which
    // does. Issue #28's example: "café naïve — decomposed" typed in NFD.
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::string nfd = "cafe\xCC\x81 nai\xCC\x88ve \xE2\x80\x94 decomposed";
    const std::vector<TokenId> ids = tok.encode(nfd);
    REQUIRE(ids.size() >= 7);
    CHECK(std::vector<TokenId>(ids.begin(), ids.begin() + 7) ==
          std::vector<TokenId>{924, 58858, 94880, 586, 1959, 28502, 3865});  // Hugging Face
    CHECK(ids == tok.encode("caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 decomposed"));
    CHECK(tok.decode(ids) == "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 decomposed");
    size_t differ = 0;
    for (const test::ReferenceCase& c : test::load_qwen3_corpus_reference()) {
      if (c.ids == c.ids_nfc) continue;
      ++differ;
      INFO("'", printable(c.text), "'");
      CHECK(c.nfc != c.text);  // only text that is not NFC tokenizes differently in llama.cpp
      CHECK(tok.encode(c.text) != c.ids);
      if (c.text == nfd) {
        CHECK(std::vector<TokenId>(c.ids.begin(), c.ids.begin() + 7) ==
              std::vector<TokenId>{924, 1859, 53839, 308, 2143, 136, 230});  // llama.cpp's ids
        CHECK(c.ids.size() == 11);
      }
    }
    CHECK(differ >= 20);
  }

  TEST_CASE("qwen3: NFC leaves compatibility characters alone and composes across the fragment") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    // NFKC would make "fi" of the ligature, "2" of the superscript and "A" of fullwidth A.
    for (const char* text : {"\xEF\xAC\x81", "x\xC2\xB2", "\xEF\xBC\xA1", "\xE2\x91\xA0"})
      CHECK(tok.decode(tok.encode(text)) == text);
    // U+212B ANGSTROM SIGN is a singleton: NFC maps it to U+00C5.
    CHECK(tok.decode(tok.encode("\xE2\x84\xAB")) == "\xC3\x85");
    // Normalized between special tokens, which are split out of the raw text first.
    CHECK(tok.decode(tok.encode("<think>e\xCC\x81</think>")) == "<think>\xC3\xA9</think>");
  }

  TEST_CASE("qwen3: llama.cpp's documented vector (docs/qwen.md#encoding)") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK(tok.encode("Hello world, I am") == std::vector<TokenId>{9707, 1879, 11, 358, 1079});
  }

  TEST_CASE("qwen3: llama.cpp's ggml-vocab-qwen2 test vectors") {
    // A second oracle besides the JS tokenizer: llama.cpp's own expected ids (llama_cpp/README.md).
    const std::string dir = std::string(UGRAD_SOURCE_DIR) + "/test/llm/tokenizer/llama_cpp/";
    std::ifstream inp(dir + "ggml-vocab-qwen2.gguf.inp", std::ios::binary);
    std::ifstream out(dir + "ggml-vocab-qwen2.gguf.out");
    REQUIRE(inp);
    REQUIRE(out);
    const std::string all{std::istreambuf_iterator<char>(inp), {}};
    constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    size_t n_cases = 0;
    for (size_t pos = 0; pos < all.size();) {
      const size_t end = all.find(kSeparator, pos);
      REQUIRE(end != std::string::npos);
      const std::string text = all.substr(pos, end - pos);
      pos = end + kSeparator.size();
      std::string line;
      REQUIRE(std::getline(out, line));
      std::vector<TokenId> expected;
      std::istringstream ids(line);
      for (TokenId id; ids >> id;) expected.push_back(id);
      INFO("case ", n_cases, ": '", printable(text), "'");
      CHECK(tok.encode(text, /*allow_special=*/false) == expected);
      ++n_cases;
    }
    CHECK(n_cases == 46);
  }

  TEST_CASE("qwen3: merge order equals a naive lowest-rank-first BPE on random text") {
    // Second implementation as oracle: strings, a map of pair ranks, O(n^2) per word.
    const VocabData vocab = test::load_qwen3_vocab();
    std::map<std::pair<std::string, std::string>, size_t> ranks;
    for (size_t r = 0; r < vocab.merges.size(); ++r) {
      const std::string& m = vocab.merges[r];
      const size_t space = m.find(' ', 1);
      ranks.emplace(std::pair{m.substr(0, space), m.substr(space + 1)}, r);
    }
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const auto naive = [&](std::string_view piece) {
      std::vector<std::string> syms;
      for (char c : piece) syms.push_back(bytes_to_byte_level(std::string(1, c)));
      for (;;) {
        size_t best = SIZE_MAX, at = 0;
        for (size_t i = 0; i + 1 < syms.size(); ++i) {
          auto it = ranks.find({syms[i], syms[i + 1]});
          if (it != ranks.end() && it->second < best) best = it->second, at = i;
        }
        if (best == SIZE_MAX) break;
        syms[at] += syms[at + 1];
        syms.erase(syms.begin() + at + 1);
      }
      std::vector<TokenId> ids;
      for (const std::string& s : syms) ids.push_back(*tok.token_id(s));
      return ids;
    };
    std::mt19937 rng(7);
    const std::vector<uint32_t> alphabet = {'a',  'e',    'i',    'n',     's',    't',
                                            'r',  ' ',    '\n',   '.',     '0',    '1',
                                            0xE9, 0x4E2D, 0x6587, 0x1F600, 0x0301, 0x0436};
    size_t words = 0;
    for (int round = 0; round < 300; ++round) {
      std::string text;
      const int len = 1 + static_cast<int>(rng() % 40);
      for (int i = 0; i < len; ++i) append_utf8(text, alphabet[rng() % alphabet.size()]);
      // encode() splits the NFC form (the alphabet has U+0301 to compose with 'e').
      const std::string nfc = to_nfc(text);
      std::vector<std::string_view> pieces;
      tok.pre_tokenizer().split(nfc, pieces);
      std::vector<TokenId> expected;
      for (std::string_view p : pieces) {
        const std::vector<TokenId> ids = naive(p);
        expected.insert(expected.end(), ids.begin(), ids.end());
        ++words;
      }
      INFO("text: '", text, "'");
      CHECK(tok.encode(text, false) == expected);
    }
    CHECK(words > 300);
  }

  TEST_CASE("qwen3: U+FEFF is not whitespace (JavaScript's \\s disagrees)") {
    // ECMAScript's \s includes U+FEFF and excludes U+0085; Unicode White_Space (PCRE2 with UCP,
    // llama.cpp, the Rust and Python regex engines) is the other way round. The vocabulary was
    // trained the Unicode way: "\uFEFF//" is one token, which the JS tokenizer never produces
    // (it gives 3225 322), so such strings are not in the JS-checked corpus.
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK(tok.encode("\xEF\xBB\xBF//") == std::vector<TokenId>{34766});
    std::vector<std::string_view> pieces;
    tok.pre_tokenizer().split("!\xC2\x85", pieces);
    CHECK(pieces.size() == 2);  // U+0085 (NEL) is \s, so it does not join the punctuation run
  }

  TEST_CASE("qwen3: control tokens need allow_special but user-defined ones are always split out") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::string text = "<|im_start|>user\n<think>hi</think><|im_end|>";
    const std::vector<TokenId> with = tok.encode(text, /*allow_special=*/true);
    CHECK(with.front() == 151644);
    CHECK(with.back() == 151645);
    const std::vector<TokenId> without = tok.encode(text, /*allow_special=*/false);
    CHECK(std::find(without.begin(), without.end(), 151644) == without.end());
    CHECK(std::find(without.begin(), without.end(), 151645) == without.end());
    CHECK(std::find(without.begin(), without.end(), 151667) != without.end());  // <think>
    CHECK(std::find(without.begin(), without.end(), 151668) != without.end());  // </think>
    CHECK(tok.decode(without) == text);
    CHECK(tok.decode(with) == text);
    // Without render_special, control tokens vanish and user-defined ones stay.
    CHECK(tok.decode(with, /*render_special=*/false) == "user\n<think>hi</think>");
    CHECK(tok.token_to_piece(151645, false).empty());
    CHECK(tok.token_to_piece(151645, true) == "<|im_end|>");
    // [PAD…] fillers are never matched in text.
    CHECK(tok.encode("[PAD151700]").size() > 1);
  }

  TEST_CASE("qwen3: longest special token wins and partial ones are plain text") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK(tok.encode("<tool_response>") == std::vector<TokenId>{151665});
    CHECK(tok.encode("</tool_response>") == std::vector<TokenId>{151666});
    const std::vector<TokenId> partial = tok.encode("<|im_start|");
    CHECK(std::find(partial.begin(), partial.end(), 151644) == partial.end());
  }

  TEST_CASE("qwen3: invalid UTF-8 input is an error naming the byte") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    CHECK_THROWS_WITH_AS(tok.encode("ok\xff"), doctest::Contains("byte 2"), Error);
    CHECK_THROWS_AS(tok.encode("\xc3"), Error);          // truncated
    CHECK_THROWS_AS(tok.encode("\xed\xa0\x80"), Error);  // surrogate
    CHECK_THROWS_AS(tok.encode("\xc0\xaf"), Error);      // overlong
    CHECK_THROWS_AS(tok.decode(std::vector<TokenId>{151936}), Error);
    CHECK_THROWS_AS(tok.decode(std::vector<TokenId>{-1}), Error);
  }

  TEST_CASE("qwen3: huge runs of one class do not overflow the regex engine") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    for (const std::string& text : {std::string(100000, ' ') + "x", std::string(100000, 'a'),
                                    std::string(50000, '\n'), std::string(20000, '!') + "\r\n"}) {
      const std::vector<TokenId> ids = tok.encode(text);
      CHECK(!ids.empty());
      CHECK(tok.decode(ids) == text);
    }
  }
}

}  // namespace
}  // namespace ugrad::llm
