// Dequantizers against hand-built blocks. Each expected value is written from the format's
// definition (docs/quants.md), element by element, not with the implementation's loops.
#include "llm/quant/dequantize.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/error.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int8_t kNL[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                            1,    13,   25,  38,  53,  69,  89,  113};

void put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = uint8_t(v & 0xff);
  b[off + 1] = uint8_t(v >> 8);
}

std::vector<float> run(GgmlType t, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -999.0f);
  dequantize(t, bytes, out);
  return out;
}

// "Split halves" nibble pattern used below: low nibble j, high nibble 15 - j.
uint8_t ramp(int j) { return uint8_t((j & 15) | ((15 - (j & 15)) << 4)); }

}  // namespace

TEST_SUITE("dequantize") {
  TEST_CASE("F32, F16, BF16 element types") {
    std::vector<uint8_t> f32(8);
    const float vals[2] = {1.5f, -0.0f};
    std::memcpy(f32.data(), vals, 8);
    auto y = run(GgmlType::F32, f32, 2);
    CHECK(y[0] == 1.5f);
    CHECK(std::signbit(y[1]));

    std::vector<uint8_t> f16(12);
    const uint16_t halves[6] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00, 0x3555};
    for (int i = 0; i < 6; ++i) put16(f16, 2 * i, halves[i]);
    y = run(GgmlType::F16, f16, 6);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == -2.0f);
    CHECK(y[2] == 65504.0f);
    CHECK(y[3] == 0x1p-24f);
    CHECK(y[4] == INFINITY);
    CHECK(y[5] == 0x1.554p-2f);  // 0x3555: exponent 13 -> 2^-2, mantissa 0x155

    std::vector<uint8_t> bf(6);
    put16(bf, 0, 0x3f80);
    put16(bf, 2, 0xc0a0);
    put16(bf, 4, 0x7f80);
    y = run(GgmlType::BF16, bf, 3);
    CHECK(y[0] == 1.0f);
    CHECK(y[1] == -5.0f);
    CHECK(y[2] == INFINITY);
  }

  TEST_CASE("Q8_0: y = d * q") {
    std::vector<uint8_t> b(34);
    put16(b, 0, 0x3800);  // d = 0.5
    for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(int8_t(j - 16));
    auto y = run(GgmlType::Q8_0, b, 32);
    for (int j = 0; j < 32; ++j) CHECK(y[j] == 0.5f * float(j - 16));
    CHECK(y[0] == -8.0f);
    CHECK(y[31] == 7.5f);
  }

  TEST_CASE("Q4_0: split-halves nibbles, y = d * (q - 8)") {
    std::vector<uint8_t> b(2 * 18);
    put16(b, 0, 0x4000);   // block 0: d = 2
    put16(b, 18, 0xb400);  // block 1: d = -0.25
    for (int j = 0; j < 16; ++j) b[2 + j] = b[20 + j] = ramp(j);
    auto y = run(GgmlType::Q4_0, b, 64);
    CHECK(y[0] == -16.0f);   // lo 0
    CHECK(y[15] == 14.0f);   // lo 15
    CHECK(y[16] == 14.0f);   // hi of byte 0 = 15
    CHECK(y[31] == -16.0f);  // hi of byte 15 = 0
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 2.0f * float(j - 8));
      CHECK(y[16 + j] == 2.0f * float(7 - j));
      CHECK(y[32 + j] == -0.25f * float(j - 8));
      CHECK(y[48 + j] == -0.25f * float(7 - j));
    }
  }

  TEST_CASE("Q4_1: y = d * q + m") {
    std::vector<uint8_t> b(20);
    put16(b, 0, 0x3800);  // d = 0.5
    put16(b, 2, 0xbc00);  // m = -1
    for (int j = 0; j < 16; ++j) b[4 + j] = ramp(j);
    auto y = run(GgmlType::Q4_1, b, 32);
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 0.5f * float(j) - 1.0f);
      CHECK(y[16 + j] == 0.5f * float(15 - j) - 1.0f);
    }
  }

  TEST_CASE("Q5_0: qh bit e is the 5th bit of element e, y = d * (q - 16)") {
    std::vector<uint8_t> b(22);
    put16(b, 0, 0x3c00);  // d = 1
    // qh = 0xffff0001: element 0 and elements 16..31 have the 5th bit.
    b[2] = 0x01, b[3] = 0x00, b[4] = 0xff, b[5] = 0xff;
    for (int j = 0; j < 16; ++j) b[6 + j] = ramp(j);
    auto y = run(GgmlType::Q5_0, b, 32);
    CHECK(y[0] == 0.0f);  // 0 + 16 - 16
    for (int j = 1; j < 16; ++j) CHECK(y[j] == float(j - 16));
    for (int j = 0; j < 16; ++j) CHECK(y[16 + j] == float(15 - j));  // (15-j) + 16 - 16
  }

  TEST_CASE("Q5_1: y = d * q5 + m") {
    std::vector<uint8_t> b(24);
    put16(b, 0, 0x3400);                                 // d = 0.25
    put16(b, 2, 0x4000);                                 // m = 2
    b[4] = 0x01, b[5] = 0x00, b[6] = 0x00, b[7] = 0x80;  // qh = 0x80000001
    for (int j = 0; j < 16; ++j) b[8 + j] = 0xf0;        // lo 0, hi 15
    auto y = run(GgmlType::Q5_1, b, 32);
    CHECK(y[0] == 6.0f);  // 0.25 * 16 + 2
    for (int j = 1; j < 16; ++j) CHECK(y[j] == 2.0f);
    for (int j = 16; j < 31; ++j) CHECK(y[j] == 5.75f);  // 0.25 * 15 + 2
    CHECK(y[31] == 9.75f);                               // 0.25 * 31 + 2
  }

  // Q2_K/Q3_K 2-bit quant of element e (docs/quants.md#q2_k): half h, quarter k, lane l read bits
  // 2k..2k+1 of qs[32h + l].
  int two_bits(const std::vector<uint8_t>& b, size_t qs_off, int e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    return (b[qs_off + 32 * h + l] >> (2 * k)) & 3;
  }

  TEST_CASE("Q2_K: 16 sub-blocks of 16, 4-bit scale and min per byte, 2-bit quants") {
    std::vector<uint8_t> b(84);
    for (int j = 0; j < 16; ++j) b[j] = uint8_t(j | ((15 - j) << 4));  // sc j, m 15 - j
    for (int i = 0; i < 64; ++i) b[16 + i] = uint8_t(i * 37 + 11);
    put16(b, 80, 0x3800);  // d = 0.5
    put16(b, 82, 0x3400);  // dmin = 0.25
    auto y = run(GgmlType::Q2_K, b, 256);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16;
      CHECK(y[e] == 0.5f * float(j) * float(two_bits(b, 16, e)) - 0.25f * float(15 - j));
    }
    CHECK(y[0] == -3.75f);   // sc 0: only the min, 0.25 * 15
    CHECK(y[100] == 3.75f);  // sc 6, q 2 (qs[4] = 159, bits 6..7), m 9: 0.5*6*2 - 0.25*9
    CHECK(y[255] == 0.0f);   // sc 15, q 0, m 0
  }

  TEST_CASE("Q3_K: hmask 3rd bits, 6-bit scales packed in 12 bytes, d last") {
    // ls = {0,1,2,3, 15,16,17,31, 32,33,47,48, 55,60,62,63}: low nibbles of j < 8 in bytes 0-7,
    // of j >= 8 in their high nibbles, top 2 bits of j at bits 2(j/4) of byte 8 + j%4.
    constexpr uint8_t kPacked[12] = {0x00, 0x11, 0xF2, 0x03, 0x7F, 0xC0,
                                     0xE1, 0xFF, 0xE0, 0xE4, 0xE4, 0xF4};
    const int ls[16] = {0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 55, 60, 62, 63};
    std::vector<uint8_t> b(110);
    for (int i = 0; i < 32; ++i) b[i] = uint8_t(i * 53 + 7);        // hmask
    for (int i = 0; i < 64; ++i) b[32 + i] = uint8_t(i * 37 + 11);  // qs
    std::memcpy(&b[96], kPacked, 12);
    put16(b, 108, 0x3400);  // d = 0.25
    auto y = run(GgmlType::Q3_K, b, 256);
    for (int e = 0; e < 256; ++e) {
      const int high = (b[e % 32] >> (e / 32)) & 1;  // bit e/32 of hmask[e%32]
      const int q = two_bits(b, 32, e) + 4 * high - 4;
      CHECK(y[e] == 0.25f * float(ls[e / 16] - 32) * float(q));
    }
    CHECK(y[0] == -24.0f);    // ls 0: scale -32; qs[0] = 11, hmask[0] = 7: q = 3 + 4 - 4
    CHECK(y[255] == -31.0f);  // ls 63: scale 31; qs[63] = 38, hmask[31] = 114: q = 0 + 0 - 4
  }

  // Q4_K/Q5_K scales: sc = {1,2,3,4,17,33,50,63}, m = {0,5,10,15,16,31,47,62}, packed by hand:
  // bytes 0-3 sc0..3 | top2(sc4..7) << 6, bytes 4-7 m0..3 | top2(m4..7) << 6,
  // bytes 8-11 low4(sc4..7) | low4(m4..7) << 4.
  constexpr uint8_t kPackedScales[12] = {0x41, 0x82, 0xC3, 0xC4, 0x40, 0x45,
                                         0x8A, 0xCF, 0x01, 0xF1, 0xF2, 0xEF};
  constexpr int kSc[8] = {1, 2, 3, 4, 17, 33, 50, 63};
  constexpr int kM[8] = {0, 5, 10, 15, 16, 31, 47, 62};

  TEST_CASE("Q4_K: 8 sub-blocks of 32, 6-bit scales and mins") {
    std::vector<uint8_t> b(144);
    put16(b, 0, 0x3c00);  // d = 1
    put16(b, 2, 0x3800);  // dmin = 0.5
    std::memcpy(&b[4], kPackedScales, 12);
    for (int i = 0; i < 128; ++i) b[16 + i] = ramp(i);
    auto y = run(GgmlType::Q4_K, b, 256);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32, l = e % 32;  // sub-block j reads qs[32*(j/2) + l]
      const int q = (j % 2 == 0) ? (l % 16) : (15 - l % 16);
      CHECK(y[e] == float(kSc[j] * q) - 0.5f * float(kM[j]));
    }
    CHECK(y[0] == 0.0f);
    CHECK(y[255] == -31.0f);         // sc 63 * q 0 - 0.5 * 62
    CHECK(y[32 * 5 + 3] == 380.5f);  // sc 33 * q 12 - 0.5 * 31
  }

  TEST_CASE("Q5_K: Q4_K plus bit j of qh[l]") {
    std::vector<uint8_t> b(176);
    put16(b, 0, 0x3c00);  // d = 1
    put16(b, 2, 0x3800);  // dmin = 0.5
    std::memcpy(&b[4], kPackedScales, 12);
    for (int l = 0; l < 32; ++l) b[16 + l] = uint8_t(0xA5 ^ (l * 7));
    for (int i = 0; i < 128; ++i) b[48 + i] = ramp(i);
    auto y = run(GgmlType::Q5_K, b, 256);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32, l = e % 32;
      const int nib = (j % 2 == 0) ? (l % 16) : (15 - l % 16);
      const int q = nib + 16 * ((b[16 + l] >> j) & 1);
      CHECK(y[e] == float(kSc[j] * q) - 0.5f * float(kM[j]));
    }
  }

  TEST_CASE("Q6_K: 16 sub-blocks of 16, int8 scales, d last") {
    std::vector<uint8_t> b(210);
    for (int i = 0; i < 128; ++i) b[i] = uint8_t(i * 37 + 11);         // ql
    for (int i = 0; i < 64; ++i) b[128 + i] = uint8_t(i * 101 + 5);    // qh
    for (int i = 0; i < 16; ++i) b[192 + i] = uint8_t(int8_t(i - 8));  // scales -8..7
    put16(b, 208, 0x3800);                                             // d = 0.5
    auto y = run(GgmlType::Q6_K, b, 256);
    for (int e = 0; e < 256; ++e) {
      // Element e: half h, quarter k of the half, lane l (docs/quants.md#q6_k).
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t qlb = b[64 * h + l + (k % 2 == 1 ? 32 : 0)];
      const int low = k < 2 ? (qlb & 15) : (qlb >> 4);
      const int high = (b[128 + 32 * h + l] >> (2 * k)) & 3;
      const int q = low + 16 * high - 32;
      CHECK(y[e] == 0.5f * float(int8_t(b[192 + e / 16])) * float(q));
    }
  }

  TEST_CASE("Q8_K: f32 d, y = d * q") {
    std::vector<uint8_t> b(292);
    const float d = -0.5f;
    std::memcpy(&b[0], &d, 4);
    for (int j = 0; j < 256; ++j) b[4 + j] = uint8_t(j);  // as int8: 0..127, -128..-1
    auto y = run(GgmlType::Q8_K, b, 256);
    CHECK(y[1] == -0.5f);
    CHECK(y[128] == 64.0f);  // int8 -128
    CHECK(y[255] == 0.5f);   // int8 -1
  }

  TEST_CASE("IQ4_NL: nibbles index the fixed table") {
    std::vector<uint8_t> b(18);
    put16(b, 0, 0x3800);  // d = 0.5
    for (int j = 0; j < 16; ++j) b[2 + j] = ramp(j);
    auto y = run(GgmlType::IQ4_NL, b, 32);
    CHECK(y[0] == -63.5f);
    CHECK(y[15] == 56.5f);
    CHECK(y[16] == 56.5f);
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 0.5f * float(kNL[j]));
      CHECK(y[16 + j] == 0.5f * float(kNL[15 - j]));
    }
  }

  TEST_CASE("IQ4_XS: 6-bit signed sub-block scales split over scales_l and scales_h") {
    std::vector<uint8_t> b(136);
    put16(b, 0, 0x3400);  // d = 0.25
    // ls = {0, 1, 31, 32, 33, 47, 62, 63}: low nibbles pairwise, high 2 bits at 2*ib.
    put16(b, 2, 0xFA90);
    b[4] = 0x10, b[5] = 0x0F, b[6] = 0xF1, b[7] = 0xFE;
    for (int i = 0; i < 128; ++i) b[8 + i] = ramp(i);
    const int ls[8] = {0, 1, 31, 32, 33, 47, 62, 63};
    auto y = run(GgmlType::IQ4_XS, b, 256);
    for (int ib = 0; ib < 8; ++ib) {
      const float dl = 0.25f * float(ls[ib] - 32);
      for (int j = 0; j < 16; ++j) {
        CHECK(y[32 * ib + j] == dl * float(kNL[j]));
        CHECK(y[32 * ib + 16 + j] == dl * float(kNL[15 - j]));
      }
    }
    CHECK(y[0] == 1016.0f);  // 0.25 * -32 * -127
  }

  TEST_CASE("MXFP4: E8M0 scale times E2M1 values") {
    // OCP MX: E2M1 magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign. E8M0 e -> 2^(e-127).
    const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    std::vector<uint8_t> b(2 * 17);
    b[0] = 129;  // scale 4
    b[17] = 1;   // scale 2^-126
    for (int j = 0; j < 16; ++j) b[1 + j] = b[18 + j] = ramp(j);
    auto y = run(GgmlType::MXFP4, b, 64);
    for (int j = 0; j < 16; ++j) {
      CHECK(y[j] == 4.0f * e2m1[j]);
      CHECK(y[16 + j] == 4.0f * e2m1[15 - j]);
      CHECK(y[32 + j] == std::ldexp(e2m1[j], -126));
    }
    CHECK(y[7] == 24.0f);
  }

  TEST_CASE("size mismatches are errors naming the format and sizes") {
    std::vector<uint8_t> bytes(144);
    std::vector<float> out(256);
    CHECK_NOTHROW(dequantize(GgmlType::Q4_K, bytes, out));
    std::vector<float> odd(100);
    CHECK_THROWS_WITH_AS(dequantize(GgmlType::Q4_K, bytes, odd),
                         doctest::Contains("Q4_K: 100 output elements"), Error);
    std::vector<uint8_t> shorter(143);
    CHECK_THROWS_WITH_AS(dequantize(GgmlType::Q4_K, shorter, out),
                         doctest::Contains("need 144 bytes"), Error);
    std::vector<uint8_t> longer(145);
    CHECK_THROWS_WITH_AS(dequantize(GgmlType::Q4_K, longer, out), doctest::Contains("got 145"),
                         Error);
    CHECK_NOTHROW(dequantize(GgmlType::Q8_0, {}, {}));  // zero blocks
  }
}
