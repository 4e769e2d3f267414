// quote(): strings from files and users, made printable for error messages.
#include <doctest/doctest.h>

#include <string>

#include "base/quote.h"

namespace ugrad {
namespace {

// True when every byte is printable ASCII or part of valid UTF-8 text above U+009F.
bool printable(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x20 || c == 0x7F) return false;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<uint8_t>(s[i + 1]) < 0xA0) return false;
  }
  return true;
}

TEST_SUITE("uop") {
  TEST_CASE("quote: plain text as it is, in single quotes") {
    CHECK(quote("general.architecture") == "'general.architecture'");
    CHECK(quote("") == "''");
    CHECK(quote("caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80") ==
          "'caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80'");
  }

  TEST_CASE("quote: control bytes, quotes, backslashes and invalid UTF-8 are escaped") {
    using namespace std::string_literals;
    CHECK(quote("a\nb\tc\rd") == "'a\\nb\\tc\\rd'");
    CHECK(quote("it's a\\b") == "'it\\'s a\\\\b'");
    CHECK(quote("x\x08y\x7F") == "'x\\x08y\\x7f'");
    CHECK(quote("key\0tail"s) == "'key\\x00tail'");       // a NUL no longer ends the message
    CHECK(quote("\xC2\x85") == "'\\u0085'");              // C1 control NEL
    CHECK(quote("\xFF\xC3") == "'\\xff\\xc3'");           // invalid, truncated
    CHECK(quote("\xED\xA0\x80") == "'\\xed\\xa0\\x80'");  // a surrogate
    CHECK(quote("\xC0\xAF") == "'\\xc0\\xaf'");           // overlong
    for (int b = 0; b < 256; ++b) {
      const std::string q = quote(std::string(1, static_cast<char>(b)) + "\xC2");
      CAPTURE(b);
      CHECK(printable(q));
    }
  }

  TEST_CASE("quote: a long string is cut at a character boundary and says its length") {
    CHECK(quote(std::string(100, 'a'), 8) == "'aaaaaaaa...' (100 bytes)");
    CHECK(quote(std::string(8, 'a'), 8) == "'aaaaaaaa'");
    // "é" (2 bytes) straddles the limit: kept whole.
    CHECK(quote("aaaaaaa\xC3\xA9zz", 8) == "'aaaaaaa\xC3\xA9...' (11 bytes)");
    const std::string q = quote(std::string(1 << 20, '\x01'));
    CHECK(q.size() <= 4 * kQuoteMaxBytes + 32);  // \xHH per byte shown, then the length
    CHECK(q.ends_with("...' (1048576 bytes)"));
  }
}

}  // namespace
}  // namespace ugrad
