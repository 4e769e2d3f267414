// The GPT-2 byte-level alphabet, against its definition and the real vocabulary's byte tokens.
#include "llm/tokenizer/byte_unicode.h"

#include <doctest/doctest.h>

#include <set>

#include "llm/tokenizer/utf8.h"
#include "test/llm/tokenizer/reference_data.h"

namespace ugrad::llm {
namespace {

TEST_SUITE("tokenizer") {
  TEST_CASE("byte_unicode: known points of the mapping") {
    CHECK(byte_to_codepoint(' ') == 0x120);   // Ġ
    CHECK(byte_to_codepoint('\n') == 0x10A);  // Ċ
    CHECK(byte_to_codepoint('\t') == 0x109);  // ĉ
    CHECK(byte_to_codepoint(0) == 0x100);
    CHECK(byte_to_codepoint('!') == '!');
    CHECK(byte_to_codepoint('~') == '~');
    CHECK(byte_to_codepoint(0x7F) == 0x121);
    CHECK(byte_to_codepoint(0xA0) == 0x142);
    CHECK(byte_to_codepoint(0xAD) == 0x143);  // soft hyphen, the last remapped byte
    CHECK(byte_to_codepoint(0xE9) == 0xE9);
    CHECK(bytes_to_byte_level(" hello\n") == "\xC4\xA0hello\xC4\x8A");
  }

  TEST_CASE("byte_unicode: a bijection between bytes and 256 code points") {
    std::set<uint32_t> seen;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = byte_to_codepoint(static_cast<uint8_t>(b));
      seen.insert(cp);
      CHECK(codepoint_to_byte(cp) == b);
    }
    CHECK(seen.size() == 256);
    CHECK_FALSE(codepoint_to_byte(0x20).has_value());  // space itself is not in the alphabet
    CHECK_FALSE(codepoint_to_byte(0x144).has_value());
    CHECK_FALSE(codepoint_to_byte(0x4E2D).has_value());
    std::string all;
    for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
    CHECK(byte_level_to_bytes(bytes_to_byte_level(all)) == all);
    CHECK_FALSE(byte_level_to_bytes("中").has_value());
    CHECK_FALSE(byte_level_to_bytes("\xff").has_value());
  }

  TEST_CASE("byte_unicode: Qwen3's first 256 tokens are the alphabet in GPT-2's order") {
    // GPT-2 lists the self-mapped bytes first, then the remapped ones (U+0100...) in byte order.
    const BpeTokenizer& tok = test::qwen3_tokenizer();
    std::vector<uint8_t> order;
    for (int b = 0; b < 256; ++b) {
      if (byte_to_codepoint(static_cast<uint8_t>(b)) == static_cast<uint32_t>(b))
        order.push_back(b);
    }
    for (int b = 0; b < 256; ++b) {
      if (byte_to_codepoint(static_cast<uint8_t>(b)) != static_cast<uint32_t>(b))
        order.push_back(b);
    }
    REQUIRE(order.size() == 256);
    for (TokenId id = 0; id < 256; ++id) {
      CHECK(tok.token_to_piece(id) == std::string(1, static_cast<char>(order[id])));
    }
  }

  TEST_CASE("utf8: validation follows RFC 3629") {
    CHECK(utf8_invalid_offset("plain ascii") == 11);
    CHECK(utf8_invalid_offset("é中😀") == 9);
    CHECK(utf8_invalid_offset("a\x80") == 1);
    CHECK(utf8_invalid_offset("\xe0\x80\x80") == 0);      // overlong
    CHECK(utf8_invalid_offset("\xf4\x90\x80\x80") == 0);  // > U+10FFFF
    CHECK(utf8_invalid_offset("\xed\xbf\xbf") == 0);      // surrogate
    CHECK(utf8_invalid_offset("ab\xf0\x9f\x98") == 2);    // truncated
    std::string s;
    for (uint32_t cp : {0x41u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) append_utf8(s, cp);
    CHECK(utf8_invalid_offset(s) == s.size());
  }
}

}  // namespace
}  // namespace ugrad::llm
