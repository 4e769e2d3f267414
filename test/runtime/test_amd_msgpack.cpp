// The msgpack reader against hand-encoded documents (MessagePack spec encodings).
#include <doctest/doctest.h>

#include <vector>

#include "base/error.h"
#include "runtime/amd/amd_msgpack.h"

using namespace ugrad;

TEST_SUITE("amd_msgpack") {
  TEST_CASE("scalars, strings, arrays and maps") {
    // {"a": 1, "bc": [-1, 300, "x"], "t": true, "f": 1.5(f64), "n": nil}
    std::vector<uint8_t> doc = {0x85, 0xa1, 'a', 0x01, 0xa2, 'b',  'c',  0x93, 0xff, 0xcd, 0x01,
                                0x2c, 0xa1, 'x', 0xa1, 't',  0xc3, 0xa1, 'f',  0xcb, 0x3f, 0xf8,
                                0,    0,    0,   0,    0,    0,    0xa1, 'n',  0xc0};
    MsgPackValue v = parse_msgpack(doc, "doc");
    REQUIRE(v.kind == MsgPackValue::Kind::Map);
    CHECK(v.find("a")->as_uint("a") == 1);
    const MsgPackValue* bc = v.find("bc");
    REQUIRE(bc->array.size() == 3);
    CHECK(bc->array[0].int_value == -1);
    CHECK(bc->array[1].as_uint("300") == 300);
    CHECK(bc->array[2].as_str("x") == "x");
    CHECK(v.find("t")->boolean);
    CHECK(v.find("f")->float_value == 1.5);
    CHECK(v.find("n")->kind == MsgPackValue::Kind::Nil);
    CHECK(v.find("zz") == nullptr);
    CHECK_THROWS_AS(bc->array[0].as_uint("neg"), Error);
  }

  TEST_CASE("bad input is an Error, never a crash") {
    std::vector<uint8_t> truncated_str = {0xa5, 'a', 'b'};
    CHECK_THROWS_AS(parse_msgpack(truncated_str, "t"), Error);
    std::vector<uint8_t> huge_array = {0xdd, 0xff, 0xff, 0xff, 0xff};
    CHECK_THROWS_AS(parse_msgpack(huge_array, "t"), Error);
    std::vector<uint8_t> trailing = {0x01, 0x02};
    CHECK_THROWS_AS(parse_msgpack(trailing, "t"), Error);
    std::vector<uint8_t> deep(100, 0x91);  // [[[[...
    deep.push_back(0x01);
    CHECK_THROWS_AS(parse_msgpack(deep, "t"), Error);
    std::vector<uint8_t> bad_tag = {0xc1};
    CHECK_THROWS_AS(parse_msgpack(bad_tag, "t"), Error);
  }
}
