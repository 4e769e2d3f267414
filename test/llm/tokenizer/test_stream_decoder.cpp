// StreamDecoder: output is valid UTF-8 after every token, and complete at the end.
#include "llm/tokenizer/stream_decoder.h"

#include <doctest/doctest.h>

#include "llm/tokenizer/byte_unicode.h"
#include "llm/tokenizer/utf8.h"
#include "test/llm/tokenizer/reference_data.h"

namespace ugrad::llm {
namespace {

bool valid(std::string_view s) { return utf8_invalid_offset(s) == s.size(); }

// The Qwen3 id of the single-byte token for byte b.
TokenId byte_token(const BpeTokenizer& tok, uint8_t b) {
  return *tok.token_id(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
}

TEST_SUITE("tokenizer") {
  TEST_CASE("stream_decoder: multi-byte characters split across tokens come out whole") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::string text =
        "Emoji 👨‍👩‍👧‍👦 and 🦀, CJK 𠮷野家 机器学习, Hindi "
        "क्षत्रिय, "
        "Arabic "
        "مرحبا.";
    const std::vector<TokenId> ids = tok.encode(text);
    // The test only means something if some token ends inside a character.
    size_t broken_tokens = 0;
    for (TokenId id : ids) broken_tokens += !valid(tok.token_to_piece(id));
    REQUIRE(broken_tokens > 0);

    StreamDecoder stream(tok);
    std::string out;
    for (TokenId id : ids) {
      const std::string chunk = stream.push(id);
      CHECK(valid(chunk));
      CHECK(stream.pending_bytes() <= 3);
      out += chunk;
    }
    out += stream.flush();
    CHECK(out == text);
  }

  TEST_CASE("stream_decoder: a 4-byte emoji fed byte by byte") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    StreamDecoder stream(tok);
    const std::string emoji = "😀";  // F0 9F 98 80
    for (size_t i = 0; i + 1 < emoji.size(); ++i) {
      CHECK(stream.push(byte_token(tok, static_cast<uint8_t>(emoji[i]))).empty());
      CHECK(stream.pending_bytes() == i + 1);
    }
    CHECK(stream.push(byte_token(tok, static_cast<uint8_t>(emoji.back()))) == emoji);
    CHECK(stream.flush().empty());
  }

  TEST_CASE("stream_decoder: invalid and unfinished bytes become U+FFFD") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::string fffd(kReplacementChar);
    StreamDecoder stream(tok);
    CHECK(stream.push(byte_token(tok, 0xFF)) == fffd);  // never valid: replaced at once
    CHECK(stream.push(byte_token(tok, 0xF0)).empty());
    CHECK(stream.push(byte_token(tok, 0x9F)).empty());
    CHECK(stream.push(*tok.token_id("a")) == fffd + "a");  // F0 9F cut short by 'a'
    CHECK(stream.push(byte_token(tok, 0xE4)).empty());
    CHECK(stream.flush() == fffd);  // unfinished at the end
    CHECK(stream.flush().empty());
  }

  TEST_CASE(
      "decode_text: 2-, 3- and 4-byte characters split across tokens, in the middle and at "
      "the end") {
    // Issue #28: llm --json printed the raw bytes of a character cut off by the last token.
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    const std::string fffd(kReplacementChar);
    const TokenId a = *tok.token_id("a"), b = *tok.token_id("b");
    const auto bytes = [&](std::string_view s) {
      std::vector<TokenId> ids;
      for (char c : s) ids.push_back(byte_token(tok, static_cast<uint8_t>(c)));
      return ids;
    };
    for (const std::string ch : {"\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x93\x82\x80"}) {
      for (size_t cut = 1; cut < ch.size(); ++cut) {
        CAPTURE(ch.size());
        CAPTURE(cut);
        // In the middle: the character is whole, streamed or all at once.
        std::vector<TokenId> ids{a};
        for (TokenId id : bytes(ch.substr(0, cut))) ids.push_back(id);
        for (TokenId id : bytes(ch.substr(cut))) ids.push_back(id);
        ids.push_back(b);
        CHECK(decode_text(tok, ids) == "a" + ch + "b");
        StreamDecoder stream(tok);
        std::string streamed;
        for (TokenId id : ids) {
          const std::string chunk = stream.push(id);
          CHECK(valid(chunk));
          streamed += chunk;
        }
        CHECK(streamed + stream.flush() == "a" + ch + "b");
        // At the end: the unfinished character becomes one U+FFFD, as the reference decode's.
        std::vector<TokenId> cut_ids{a};
        for (TokenId id : bytes(ch.substr(0, cut))) cut_ids.push_back(id);
        CHECK(valid(tok.decode(cut_ids)) == false);  // the raw bytes are not UTF-8
        CHECK(decode_text(tok, cut_ids) == "a" + fffd);
        // Cut in the middle by a token that cannot continue it: U+FFFD, then the rest.
        cut_ids.push_back(b);
        CHECK(decode_text(tok, cut_ids) == "a" + fffd + "b");
      }
    }
    // The bytes issue #28 saw at the end of a --json text: F0 93 82 then a space.
    CHECK(decode_text(tok, bytes("x\xF0\x93\x82 ")) == "x" + fffd + " ");
    CHECK(decode_text(tok, std::vector<TokenId>{151645}, /*render_special=*/false).empty());
  }

  TEST_CASE("stream_decoder: control tokens only when rendering specials") {
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    StreamDecoder plain(tok, /*render_special=*/false), raw(tok);
    CHECK(plain.push(151645).empty());
    CHECK(raw.push(151645) == "<|im_end|>");
    CHECK(plain.push(151667) == "<think>");  // user-defined tokens always render
  }

  TEST_CASE("sanitize_utf8: one U+FFFD per maximal invalid subpart") {
    const std::string f(kReplacementChar);
    CHECK(sanitize_utf8("ok") == "ok");
    CHECK(sanitize_utf8("a\xF0\x9F\x98") == "a" + f);
    CHECK(sanitize_utf8("\xE0\x80\xAF") == f + f + f);  // E0 80: 80 is not allowed after E0
    CHECK(sanitize_utf8("\xC3\xA9\xFF\xC3") == "é" + f + f);
  }
}

}  // namespace
}  // namespace ugrad::llm
