// exec_alu: the reference semantics of elementwise ops, checked against values worked out by hand
// and against the C++ operators of the matching native type.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "base/float16.h"
#include "test/byte_lut_reference.h"
#include "test/dot4_reference.h"
#include "uop/alu.h"

using namespace ugrad;

namespace {

ConstValue run(Op op, DType t, std::initializer_list<ConstValue> v, DType src = {}) {
  std::vector<ConstValue> ops(v);
  return exec_alu(op, t, ops, src == DType{} ? t : src);
}
int64_t ri(Op op, DType t, std::initializer_list<ConstValue> v, DType src = {}) {
  return std::get<int64_t>(run(op, t, v, src));
}
double rf(Op op, DType t, std::initializer_list<ConstValue> v, DType src = {}) {
  return std::get<double>(run(op, t, v, src));
}
bool rb(Op op, std::initializer_list<ConstValue> v, DType src) {
  return std::get<bool>(run(op, dtypes::bool_, v, src));
}
ConstValue I(int64_t v) { return v; }
ConstValue F(double v) { return v; }

}  // namespace

TEST_CASE("alu: integers wrap to the dtype's width") {
  CHECK(ri(Op::ADD, dtypes::int8, {I(127), I(1)}) == -128);
  CHECK(ri(Op::ADD, dtypes::uint8, {I(255), I(1)}) == 0);
  CHECK(ri(Op::MUL, dtypes::int16, {I(300), I(300)}) == int16_t(90000 - 131072));
  CHECK(ri(Op::SUB, dtypes::uint32, {I(0), I(1)}) == 0xffffffffll);
  CHECK(ri(Op::NEG, dtypes::int32, {I(std::numeric_limits<int32_t>::min())}) ==
        std::numeric_limits<int32_t>::min());
  CHECK(ri(Op::ADD, dtypes::int64, {I(std::numeric_limits<int64_t>::max()), I(1)}) ==
        std::numeric_limits<int64_t>::min());
  // uint64 travels as its bit pattern
  CHECK(ri(Op::ADD, dtypes::uint64, {I(-1), I(1)}) == 0);
  CHECK(ri(Op::MUL, dtypes::index, {I(1ll << 40), I(1ll << 10)}) == (1ll << 50));
}

TEST_CASE("alu: IDIV/MOD truncate toward zero, division by zero is defined") {
  CHECK(ri(Op::IDIV, dtypes::int32, {I(-7), I(2)}) == -3);
  CHECK(ri(Op::MOD, dtypes::int32, {I(-7), I(2)}) == -1);
  CHECK(ri(Op::IDIV, dtypes::int32, {I(7), I(-2)}) == -3);
  CHECK(ri(Op::MOD, dtypes::int32, {I(7), I(-2)}) == 1);
  CHECK(ri(Op::IDIV, dtypes::index, {I(-1), I(4)}) == 0);
  CHECK(ri(Op::IDIV, dtypes::int32, {I(5), I(0)}) == -1);
  CHECK(ri(Op::MOD, dtypes::int32, {I(5), I(0)}) == 5);
  CHECK(ri(Op::IDIV, dtypes::int8, {I(-128), I(-1)}) == -128);
  CHECK(ri(Op::MOD, dtypes::int8, {I(-128), I(-1)}) == 0);
  CHECK(ri(Op::IDIV, dtypes::int64, {I(std::numeric_limits<int64_t>::min()), I(-1)}) ==
        std::numeric_limits<int64_t>::min());
  // unsigned: udiv/urem on the bit patterns
  CHECK(ri(Op::IDIV, dtypes::uint8, {I(250), I(7)}) == 35);
  CHECK(ri(Op::IDIV, dtypes::uint64, {I(-2), I(2)}) == std::numeric_limits<int64_t>::max());
  CHECK(ri(Op::MOD, dtypes::uint32, {I(0xffffffffll), I(10)}) == 5);
}

TEST_CASE("alu: shifts are masked to the width, SHR is arithmetic for signed types") {
  CHECK(ri(Op::SHL, dtypes::int32, {I(1), I(33)}) == 2);
  CHECK(ri(Op::SHL, dtypes::int8, {I(1), I(7)}) == -128);
  CHECK(ri(Op::SHR, dtypes::int8, {I(-128), I(2)}) == -32);
  CHECK(ri(Op::SHR, dtypes::uint8, {I(128), I(2)}) == 32);
  CHECK(ri(Op::SHR, dtypes::uint64, {I(-1), I(63)}) == 1);
  CHECK(ri(Op::SHR, dtypes::int64, {I(-1), I(63)}) == -1);
}

TEST_CASE("alu: comparisons, bitwise ops, max, where and pow") {
  CHECK(rb(Op::CMPLT, {I(-1), I(0)}, dtypes::int32));
  CHECK_FALSE(rb(Op::CMPLT, {I(-1), I(0)}, dtypes::uint64));  // 0xfff... is the largest uint64
  CHECK(rb(Op::CMPNE, {I(3), I(4)}, dtypes::index));
  CHECK(rb(Op::CMPEQ, {true, true}, dtypes::bool_));
  CHECK(rb(Op::CMPLT, {false, true}, dtypes::bool_));
  CHECK(ri(Op::MAX, dtypes::uint32, {I(0xffffffffll), I(3)}) == 0xffffffffll);
  CHECK(ri(Op::MAX, dtypes::int32, {I(-5), I(3)}) == 3);
  CHECK(ri(Op::AND, dtypes::int32, {I(12), I(10)}) == 8);
  CHECK(ri(Op::OR, dtypes::int32, {I(12), I(10)}) == 14);
  CHECK(ri(Op::XOR, dtypes::int32, {I(12), I(10)}) == 6);
  CHECK(std::get<bool>(run(Op::AND, dtypes::bool_, {true, false})) == false);
  CHECK(std::get<bool>(run(Op::XOR, dtypes::bool_, {true, true})) == false);
  CHECK(ri(Op::WHERE, dtypes::int32, {true, I(1), I(2)}) == 1);
  CHECK(ri(Op::WHERE, dtypes::int32, {false, I(1), I(2)}) == 2);
  CHECK(ri(Op::POW, dtypes::int32, {I(3), I(4)}) == 81);
  CHECK(ri(Op::POW, dtypes::int32, {I(2), I(-1)}) == 0);
  CHECK(ri(Op::POW, dtypes::int8, {I(2), I(7)}) == -128);
  CHECK(ri(Op::MULACC, dtypes::int32, {I(3), I(4), I(5)}) == 17);
}

TEST_CASE("alu: float32 ops round like float arithmetic") {
  double a = 0.1, b = 0.2;
  CHECK(rf(Op::ADD, dtypes::float32, {F(float(a)), F(float(b))}) == double(float(a) + float(b)));
  CHECK(rf(Op::ADD, dtypes::float64, {F(a), F(b)}) == a + b);
  CHECK(rf(Op::FDIV, dtypes::float32, {F(1), F(3)}) == double(1.0f / 3.0f));
  CHECK(rf(Op::RECIP, dtypes::float32, {F(3)}) == double(1.0f / 3.0f));
  CHECK(rf(Op::SQRT, dtypes::float32, {F(2)}) == double(std::sqrt(2.0f)));
  CHECK(rf(Op::TRUNC, dtypes::float32, {F(-2.5)}) == -2.0);
  CHECK(rf(Op::EXP2, dtypes::float32, {F(10)}) == 1024.0);
  CHECK(rf(Op::LOG2, dtypes::float64, {F(8)}) == 3.0);
  CHECK(rf(Op::SIN, dtypes::float32, {F(0)}) == 0.0);
  CHECK(rf(Op::MUL, dtypes::float32, {F(1e30), F(1e30)}) == INFINITY);
}

TEST_CASE("alu: float16 and bfloat16 round to nearest even") {
  // 1 + 2^-11 is halfway between the halves 1 and 1 + 2^-10: ties to even gives 1.
  CHECK(rf(Op::ADD, dtypes::float16, {F(1.0), F(0x1p-11)}) == 1.0);
  CHECK(rf(Op::ADD, dtypes::float16, {F(1.0), F(0x1.8p-11)}) == 1.0 + 0x1p-10);
  CHECK(rf(Op::MUL, dtypes::float16, {F(300), F(300)}) == INFINITY);  // 90000 > 65504
  CHECK(rf(Op::ADD, dtypes::float16, {F(65504), F(8)}) == 65504.0);
  CHECK(rf(Op::ADD, dtypes::bfloat16, {F(1.0), F(0x1p-8)}) == 1.0);
  CHECK(rf(Op::ADD, dtypes::bfloat16, {F(1.0), F(0x1p-7)}) == 1.0 + 0x1p-7);
  // casting a double rounds once: 1 + 2^-11 + 2^-40 is just above the halfway point
  CHECK(rf(Op::CAST, dtypes::float16, {F(1.0 + 0x1p-11 + 0x1p-40)}, dtypes::float64) ==
        1.0 + 0x1p-10);
  CHECK(rf(Op::CAST, dtypes::float16, {F(1.0 + 0x1p-11)}, dtypes::float64) == 1.0);
  CHECK(rf(Op::CAST, dtypes::bfloat16, {I(257)}, dtypes::int32) == 256.0);
  CHECK(rf(Op::CAST, dtypes::bfloat16, {I((1ll << 40) + (1ll << 32) + 1)}, dtypes::int64) ==
        double((1ll << 40) + (1ll << 33)));
  CHECK(round_to_float_dtype(0.1, dtypes::float16) == double(half_to_float(float_to_half(0.1f))));
}

TEST_CASE("alu: NaN") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(rf(Op::ADD, dtypes::float32, {F(nan), F(1)})));
  CHECK(std::isnan(rf(Op::MAX, dtypes::float32, {F(nan), F(1)})));
  CHECK(std::isnan(rf(Op::MAX, dtypes::float32, {F(1), F(nan)})));
  CHECK(std::isnan(rf(Op::SQRT, dtypes::float32, {F(-1)})));
  CHECK(std::isnan(rf(Op::CAST, dtypes::float16, {F(nan)}, dtypes::float32)));
  CHECK_FALSE(rb(Op::CMPLT, {F(nan), F(1)}, dtypes::float32));
  CHECK(rb(Op::CMPNE, {F(nan), F(nan)}, dtypes::float32));
  CHECK_FALSE(rb(Op::CMPEQ, {F(nan), F(nan)}, dtypes::float32));
  CHECK(ri(Op::CAST, dtypes::int32, {F(nan)}, dtypes::float32) == 0);
  CHECK(std::get<bool>(run(Op::CAST, dtypes::bool_, {F(nan)}, dtypes::float32)));
}

TEST_CASE("alu: CAST between dtypes wraps, truncates and saturates") {
  CHECK(ri(Op::CAST, dtypes::int8, {I(300)}, dtypes::int32) == 44);
  CHECK(ri(Op::CAST, dtypes::uint8, {I(-1)}, dtypes::int32) == 255);
  CHECK(ri(Op::CAST, dtypes::int64, {I(0xffffffffll)}, dtypes::uint32) == 0xffffffffll);
  CHECK(ri(Op::CAST, dtypes::int32, {F(-2.9)}, dtypes::float32) == -2);
  CHECK(ri(Op::CAST, dtypes::int8, {F(1000)}, dtypes::float32) == 127);
  CHECK(ri(Op::CAST, dtypes::uint8, {F(-5)}, dtypes::float32) == 0);
  CHECK(ri(Op::CAST, dtypes::int64, {F(1e30)}, dtypes::float64) ==
        std::numeric_limits<int64_t>::max());
  CHECK(ri(Op::CAST, dtypes::uint64, {F(1e30)}, dtypes::float64) == -1);
  CHECK(rf(Op::CAST, dtypes::float32, {I(-1)}, dtypes::uint64) == 0x1p64);
  CHECK(rf(Op::CAST, dtypes::float32, {I(16777217)}, dtypes::int32) == 16777216.0);
  CHECK(rf(Op::CAST, dtypes::float32, {F(0.1)}, dtypes::float64) == double(0.1f));
  CHECK(rf(Op::CAST, dtypes::float32, {true}, dtypes::bool_) == 1.0);
  CHECK(std::get<bool>(run(Op::CAST, dtypes::bool_, {I(256)}, dtypes::int32)));
  CHECK_FALSE(std::get<bool>(run(Op::CAST, dtypes::bool_, {F(-0.0)}, dtypes::float32)));
}

TEST_CASE("alu: BITCAST reinterprets bits between same-size dtypes") {
  CHECK(ri(Op::BITCAST, dtypes::int32, {F(1.0)}, dtypes::float32) == 0x3f800000);
  CHECK(ri(Op::BITCAST, dtypes::uint32, {F(-0.0)}, dtypes::float32) == 0x80000000ll);
  CHECK(rf(Op::BITCAST, dtypes::float32, {I(0x40490fdb)}, dtypes::int32) == double(3.14159274f));
  CHECK(ri(Op::BITCAST, dtypes::int16, {F(1.0)}, dtypes::float16) == 0x3c00);
  CHECK(ri(Op::BITCAST, dtypes::uint16, {F(-2.0)}, dtypes::bfloat16) == 0xc000);
  CHECK(rf(Op::BITCAST, dtypes::float16, {I(-1)}, dtypes::int16) !=
        rf(Op::BITCAST, dtypes::float16, {I(-1)}, dtypes::int16));  // NaN
  CHECK(ri(Op::BITCAST, dtypes::int64, {F(1.0)}, dtypes::float64) == 0x3ff0000000000000ll);
  CHECK(ri(Op::BITCAST, dtypes::int8, {I(200)}, dtypes::uint8) == -56);
  CHECK_THROWS_AS(run(Op::BITCAST, dtypes::int32, {F(1.0)}, dtypes::float16), InternalError);
  CHECK_THROWS_AS(run(Op::FDIV, dtypes::int32, {I(1), I(2)}), InternalError);
  CHECK_THROWS_AS(run(Op::LOAD, dtypes::int32, {I(1)}), InternalError);
}

TEST_CASE("alu: DOT4 adds the 4 byte products of two words to acc, each side int8 or uint8") {
  auto dot4 = [](uint32_t a, uint32_t b, int64_t acc, Dot4Arg signs, DType t = dtypes::int32) {
    const ConstValue v[] = {I(int32_t(a)), I(int32_t(b)), I(acc)};
    return std::get<int64_t>(exec_alu(Op::DOT4, t, v, t, signs));
  };
  for (const Dot4Arg& s : test::all_dot4_signs())
    for (uint32_t a : test::extreme_dot4_words())
      for (uint32_t b : test::extreme_dot4_words())
        for (int32_t acc : {0, -7, std::numeric_limits<int32_t>::max()}) {
          CAPTURE(arg_to_string(s));
          CAPTURE(a);
          CAPTURE(b);
          CHECK(dot4(a, b, acc, s) == test::dot4_reference(a, b, acc, s));
        }
  // The extreme bytes, worked out by hand: 255 and 127, 255 and -128, -128 and -128, -1 and -1.
  const Dot4Arg uu{false, false}, us{false, true}, su{true, false}, ss{true, true};
  CHECK(dot4(0xffffffffu, 0x7f7f7f7fu, 0, us) == 4 * 255 * 127);
  CHECK(dot4(0xffffffffu, 0x80808080u, 0, us) == 4 * 255 * -128);
  CHECK(dot4(0x80808080u, 0xffffffffu, 0, su) == 4 * -128 * 255);
  CHECK(dot4(0x80808080u, 0x80808080u, 0, ss) == 4 * 128 * 128);
  CHECK(dot4(0xffffffffu, 0xffffffffu, 0, ss) == 4);
  CHECK(dot4(0xffffffffu, 0xffffffffu, 0, uu) == 4 * 255 * 255);
  CHECK(dot4(0x000000ffu, 0x00000080u, 10, ss) == 10 + 128);
  // the sum wraps to the accumulator's 32 bits; unsigned x unsigned into uint32
  CHECK(dot4(0xffffffffu, 0xffffffffu, std::numeric_limits<int32_t>::max(), uu) ==
        int32_t(uint32_t(0x7fffffffu + 4 * 255 * 255)));
  CHECK(dot4(0xffffffffu, 0xffffffffu, 0xffffffffll, uu, dtypes::uint32) == 4 * 255 * 255 - 1);
  const ConstValue v[] = {I(1), I(1), I(0)};
  CHECK_THROWS_AS(exec_alu(Op::DOT4, dtypes::int32, v), InternalError);  // no Dot4Arg
}

TEST_CASE("alu: BYTE_LUT maps each byte of a word through its 16-entry table by the low 4 bits") {
  const std::vector<int64_t> table = test::byte_lut_table();
  auto lut = [&](uint32_t w, DType t) {
    const ConstValue v[] = {I(t == dtypes::int32 ? int64_t{int32_t(w)} : int64_t{w})};
    return std::get<int64_t>(exec_alu(Op::BYTE_LUT, t, v, t, table));
  };
  // byte 0 is 2, byte 1 is 1, byte 2 is 0, byte 3 is 15, worked out by hand
  CHECK(lut(0x0F000102u, dtypes::uint32) == (42ll << 24 | 201 << 16 | 0 << 8 | 17));
  // the high 4 bits of each byte are ignored; an int32 word with a top byte past 127 is negative
  CHECK(lut(0xF3A5C1B4u, dtypes::uint32) == lut(0x03050104u, dtypes::uint32));
  CHECK(lut(0x03030303u, dtypes::int32) == -1);
  for (uint32_t w : {0u, 0x01234567u, 0x89ABCDEFu, 0xFFFFFFFFu, 0x80808080u, 0x7F7F7F7Fu})
    for (DType t : {dtypes::int32, dtypes::uint32}) {
      CAPTURE(w);
      const uint32_t want = test::byte_lut_reference(w, table);
      CHECK(lut(w, t) == (t == dtypes::int32 ? int64_t{int32_t(want)} : int64_t{want}));
    }
  const ConstValue v[] = {I(1)};
  CHECK_THROWS_AS(exec_alu(Op::BYTE_LUT, dtypes::int32, v), InternalError);  // no table
  CHECK_THROWS_AS(
      exec_alu(Op::BYTE_LUT, dtypes::int32, v, dtypes::int32, std::vector<int64_t>(15, 0)),
      InternalError);
  CHECK_THROWS_AS(exec_alu(Op::BYTE_LUT, dtypes::int16, v, dtypes::int16, table), InternalError);
}
