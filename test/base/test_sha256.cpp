#include <doctest/doctest.h>

#include <string>

#include "base/sha256.h"

using namespace ugrad;

// Vectors from NIST's FIPS 180-4 examples (SHA256.pdf, "Secure Hashing" example values).
TEST_SUITE("sha256") {
  TEST_CASE("NIST vectors") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(sha256_hex(
              "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklm"
              "nopqrlmnopqrsmnopqrstnopqrstu") ==
          "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  }

  TEST_CASE("one million 'a', in one piece and in odd-sized pieces") {
    const std::string million(1000000, 'a');
    const char* want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    CHECK(sha256_hex(million) == want);
    Sha256 pieces;
    for (size_t at = 0, step = 1; at < million.size(); at += step, step = step % 97 + 1)
      pieces.update(std::string_view(million).substr(at, step));
    CHECK(to_hex(pieces.finish()) == want);
  }

  TEST_CASE("messages around the padding boundary agree between one-shot and byte-wise hashing") {
    // 55, 56 and 64 bytes are where the length field does or does not fit in the last block.
    CHECK(sha256_hex(std::string(55, 'x')) != sha256_hex(std::string(56, 'x')));
    for (size_t n : {0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128}) {
      const std::string msg(n, static_cast<char>('a' + n % 26));
      Sha256 bytewise;
      for (char c : msg) bytewise.update(&c, 1);
      CHECK(to_hex(bytewise.finish()) == sha256_hex(msg));
    }
  }

  TEST_CASE("hex digest format") {
    Sha256Digest d{};
    d[0] = 0x0f;
    d[31] = 0xa0;
    const std::string hex = to_hex(d);
    CHECK(hex.size() == 64);
    CHECK(hex.substr(0, 2) == "0f");
    CHECK(hex.substr(62) == "a0");
  }
}
