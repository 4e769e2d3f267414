// base/float16.h against references computed a second way: a table of every finite half value
// (built with ldexp from the definition) searched for the nearest, and _Float16 where g++ has it.
#include "base/float16.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace ugrad;

namespace {

// The value of half bits h from the binary16 definition, in double.
double half_by_definition(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double mag;
  if (exp == 0x1f)
    mag = mant ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exp == 0)
    mag = std::ldexp(double(mant), -24);
  else
    mag = std::ldexp(double(1024 + mant), exp - 25);
  return sign ? -mag : mag;
}

// float -> half long-hand: nearest of the 31744 finite non-negative halves (ties to the even
// mantissa); beyond 65504 rounds to inf at the midpoint 65520.
uint16_t half_by_search(float f) {
  static const std::vector<double> table = [] {
    std::vector<double> t(0x7c00);
    for (uint32_t h = 0; h < 0x7c00; ++h) t[h] = half_by_definition(uint16_t(h));
    return t;
  }();
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7c00;
  auto it = std::lower_bound(table.begin(), table.end(), a);
  uint32_t hi = uint32_t(it - table.begin());
  if (hi == 0) return sign;
  if (hi == 0x7c00) return sign | 0x7bff;
  const uint32_t lo = hi - 1;
  const double dlo = a - table[lo], dhi = table[hi] - a;
  const uint32_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return uint16_t(sign | pick);
}

float bits_to_float(uint32_t u) { return std::bit_cast<float>(u); }

}  // namespace

TEST_SUITE("float16") {
  TEST_CASE("every half converts to the value its definition gives and round-trips") {
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const float f = half_to_float(uint16_t(h));
      const double want = half_by_definition(uint16_t(h));
      if (std::isnan(want)) {
        REQUIRE(std::isnan(f));
        // NaN payload kept, quiet bit set: F16C behaviour.
        REQUIRE(float_to_half(f) == uint16_t(h | 0x200));
        continue;
      }
      REQUIRE(double(f) == want);
      REQUIRE(std::signbit(f) == bool(h & 0x8000));
      REQUIRE(float_to_half(f) == h);
    }
  }

  TEST_CASE("float -> half at every rounding boundary matches the nearest-even search") {
    // Around every midpoint between consecutive halves: the midpoint and its float neighbours.
    for (uint32_t h = 0; h < 0x7c00; ++h) {
      const double mid =
          (half_by_definition(uint16_t(h)) + half_by_definition(uint16_t(h + 1))) / 2;
      const float m = float(mid);  // exact: a midpoint needs only 12 significant bits
      REQUIRE(double(m) == mid);
      for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, INFINITY)}) {
        REQUIRE(float_to_half(f) == half_by_search(f));
        REQUIRE(float_to_half(-f) == half_by_search(-f));
      }
    }
  }

  TEST_CASE("float -> half on strided and random floats matches the search") {
    for (uint64_t u = 0; u < (1ull << 32); u += 0x10001) {
      const float f = bits_to_float(uint32_t(u));
      if (std::isnan(f)) continue;
      REQUIRE(float_to_half(f) == half_by_search(f));
    }
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> exp(90, 150);  // around the half range
    for (int i = 0; i < 200000; ++i) {
      const uint32_t u = (rng() & 0x807fffffu) | (exp(rng) << 23);
      REQUIRE(float_to_half(bits_to_float(u)) == half_by_search(bits_to_float(u)));
    }
  }

#if defined(__FLT16_MAX__) && defined(__GNUC__) && !defined(__clang__)
  TEST_CASE("float -> half matches the compiler's _Float16 conversion") {
    std::mt19937 rng(11);
    for (int i = 0; i < 200000; ++i) {
      const float f = bits_to_float(rng());
      if (std::isnan(f)) continue;
      const _Float16 h = static_cast<_Float16>(f);
      uint16_t bits;
      std::memcpy(&bits, &h, sizeof bits);
      REQUIRE(float_to_half(f) == bits);
    }
  }
#endif

  TEST_CASE("half special values") {
    CHECK(float_to_half(0.0f) == 0x0000);
    CHECK(float_to_half(-0.0f) == 0x8000);
    CHECK(float_to_half(1.0f) == 0x3c00);
    CHECK(float_to_half(-2.0f) == 0xc000);
    CHECK(float_to_half(65504.0f) == 0x7bff);
    CHECK(float_to_half(65519.99f) == 0x7bff);
    CHECK(float_to_half(65520.0f) == 0x7c00);  // tie rounds to even = inf
    CHECK(float_to_half(1e10f) == 0x7c00);
    CHECK(float_to_half(-INFINITY) == 0xfc00);
    CHECK(float_to_half(0x1p-24f) == 0x0001);  // smallest subnormal
    CHECK(float_to_half(0x1p-25f) == 0x0000);  // tie to even zero
    CHECK(float_to_half(0x1.8p-25f) == 0x0001);
    CHECK(float_to_half(0x1.ff8p-15f) == 0x03ff);         // largest subnormal, 1023 * 2^-24
    CHECK(float_to_half(0x1.ffap-15f) == 0x03ff);         // below the tie
    CHECK(float_to_half(0x1.ffcp-15f) == 0x0400);         // tie: to even, the smallest normal
    CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3c00);      // tie, even stays
    CHECK(float_to_half(1.0f + 3 * 0x1p-11f) == 0x3c02);  // tie, odd rounds up
    CHECK((float_to_half(std::numeric_limits<float>::quiet_NaN()) & 0x7e00) == 0x7e00);
    CHECK(half_to_float(0x7c00) == INFINITY);
    CHECK(half_to_float(0x0001) == 0x1p-24f);
    static_assert(float_to_half(1.5f) == 0x3e00 && half_to_float(0x3e00) == 1.5f);  // constexpr
  }

  TEST_CASE("bf16 conversions") {
    // Every bf16 round-trips; finite ones equal the top half of the float.
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const float f = bf16_to_float(uint16_t(b));
      REQUIRE(std::bit_cast<uint32_t>(f) == b << 16);
      if (std::isnan(f))
        REQUIRE(float_to_bf16(f) == uint16_t(b | 0x40));
      else
        REQUIRE(float_to_bf16(f) == b);
    }
    // Round to nearest even against a double-precision search of the two neighbours.
    std::mt19937 rng(3);
    for (int i = 0; i < 200000; ++i) {
      const uint32_t u = rng();
      const float f = bits_to_float(u);
      if (!std::isfinite(f)) continue;
      const uint16_t lo = uint16_t(u >> 16);
      const uint16_t hi = uint16_t(lo + 1);  // next magnitude (may be inf)
      const double a = std::fabs(double(f));
      const double vlo = std::fabs(double(bf16_to_float(lo)));
      // Past the largest finite bf16 the next step is 2^128, which RNE then stores as inf.
      const double vhi =
          (hi & 0x7fff) == 0x7f80 ? std::ldexp(1.0, 128) : std::fabs(double(bf16_to_float(hi)));
      const uint16_t want = (a - vlo < vhi - a)   ? lo
                            : (vhi - a < a - vlo) ? hi
                                                  : ((lo & 1) ? hi : lo);
      REQUIRE(float_to_bf16(f) == want);
    }
    CHECK(float_to_bf16(1.0f) == 0x3f80);
    CHECK(float_to_bf16(bits_to_float(0x3f808000)) == 0x3f80);  // tie to even
    CHECK(float_to_bf16(bits_to_float(0x3f818000)) == 0x3f82);  // tie, odd rounds up
    CHECK(float_to_bf16(bits_to_float(0x7f7fffff)) == 0x7f80);  // max float rounds to inf
    CHECK(float_to_bf16(bits_to_float(0x7f800001)) == 0x7fc0);  // signalling NaN made quiet
  }
}
