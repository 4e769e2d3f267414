// The ggml type table: ids, sizes, layouts and row_bytes checks.
#include "llm/quant/formats.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <set>

#include "base/error.h"
#include "llm/quant/blocks.h"
#include "llm/quant/dequantize.h"
#include "llm/quant/quantize.h"

using namespace ugrad;
using namespace ugrad::llm;

TEST_SUITE("quant_formats") {
  TEST_CASE("table rows are unique, in id order, and findable") {
    std::set<uint32_t> ids;
    uint32_t prev = 0;
    bool first = true;
    for (const QuantFormat& f : all_formats()) {
      const uint32_t id = static_cast<uint32_t>(f.type);
      CHECK(ids.insert(id).second);
      if (!first) CHECK(id > prev);
      prev = id;
      first = false;
      REQUIRE(find_format(id).has_value());
      CHECK(find_format(id)->name == f.name);
      CHECK(&format_of(f.type) != nullptr);
      CHECK(f.block_size > 0);
      CHECK(f.block_bytes > 0);
    }
    CHECK_FALSE(find_format(4).has_value());   // removed Q4_2
    CHECK_FALSE(find_format(43).has_value());  // GGML_TYPE_COUNT
  }

  TEST_CASE("sizes agree with the bits per weight of the reference table") {
    // bits/weight x 10000 from docs/quants.md#bits-per-weight (integers to compare exactly).
    const struct {
      GgmlType t;
      uint32_t bpw_e4;
    } rows[] = {{GgmlType::Q4_0, 45000},   {GgmlType::Q4_1, 50000},   {GgmlType::Q5_0, 55000},
                {GgmlType::Q5_1, 60000},   {GgmlType::Q8_0, 85000},   {GgmlType::Q4_K, 45000},
                {GgmlType::Q5_K, 55000},   {GgmlType::Q6_K, 65625},   {GgmlType::Q8_K, 91250},
                {GgmlType::IQ4_NL, 45000}, {GgmlType::IQ4_XS, 42500}, {GgmlType::MXFP4, 42500},
                {GgmlType::F16, 160000},   {GgmlType::BF16, 160000},  {GgmlType::F32, 320000},
                {GgmlType::Q2_K, 26250},   {GgmlType::Q3_K, 34375}};
    for (const auto& r : rows) {
      const QuantFormat& f = format_of(r.t);
      CHECK_MESSAGE(f.block_bytes * 8 * 10000 == r.bpw_e4 * f.block_size, f.name);
    }
  }

  TEST_CASE("block layouts fill exactly the table's block bytes") {
    // Each layout's last field ends at the block end (field sizes from the format definitions).
    CHECK(q8_0::kQs + 32 == format_of(GgmlType::Q8_0).block_bytes);
    CHECK(q4_0::kQs + 16 == format_of(GgmlType::Q4_0).block_bytes);
    CHECK(q4_1::kQs + 16 == format_of(GgmlType::Q4_1).block_bytes);
    CHECK(q5_0::kQs + 16 == format_of(GgmlType::Q5_0).block_bytes);
    CHECK(q5_1::kQs + 16 == format_of(GgmlType::Q5_1).block_bytes);
    CHECK(iq4_nl::kQs + 16 == format_of(GgmlType::IQ4_NL).block_bytes);
    CHECK(mxfp4::kQs + 16 == format_of(GgmlType::MXFP4).block_bytes);
    CHECK(q2_k::kScales + 16 == q2_k::kQs);
    CHECK(q2_k::kQs + 64 == q2_k::kD);
    CHECK(q2_k::kDmin + 2 == format_of(GgmlType::Q2_K).block_bytes);
    CHECK(q3_k::kHmask + 32 == q3_k::kQs);
    CHECK(q3_k::kQs + 64 == q3_k::kScales);
    CHECK(q3_k::kScales + q3_k::kScaleBytes == q3_k::kD);
    CHECK(q3_k::kD + 2 == format_of(GgmlType::Q3_K).block_bytes);
    CHECK(q4_k::kQs + 128 == format_of(GgmlType::Q4_K).block_bytes);
    CHECK(q4_k::kScales + q4_k::kScaleBytes == q4_k::kQs);
    CHECK(q5_k::kQh + 32 == q5_k::kQs);
    CHECK(q5_k::kQs + 128 == format_of(GgmlType::Q5_K).block_bytes);
    CHECK(q6_k::kD + 2 == format_of(GgmlType::Q6_K).block_bytes);
    CHECK(q6_k::kScales + 16 == q6_k::kD);
    CHECK(q8_k::kBsums + 2 * 16 == format_of(GgmlType::Q8_K).block_bytes);
    CHECK(iq4_xs::kQs + 128 == format_of(GgmlType::IQ4_XS).block_bytes);
  }

  TEST_CASE("the required formats are supported, the rest fail with their name") {
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,
                       GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                       GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::MXFP4})
      CHECK_MESSAGE(can_dequantize(t), format_of(t).name);
    for (GgmlType t :
         {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
          GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q8_K})
      CHECK_MESSAGE(can_quantize(t), format_of(t).name);
    CHECK_FALSE(can_dequantize(GgmlType::IQ2_XXS));
    CHECK_FALSE(can_quantize(GgmlType::IQ2_XXS));
    CHECK(can_quantize(GgmlType::MXFP4));
    uint8_t bytes[66] = {};  // one IQ2_XXS block
    float out[256];
    CHECK_THROWS_WITH_AS(dequantize(GgmlType::IQ2_XXS, bytes, out), doctest::Contains("IQ2_XXS"),
                         Error);
    CHECK_THROWS_WITH_AS(quantize(GgmlType::IQ2_XXS, out, bytes), doctest::Contains("IQ2_XXS"),
                         Error);
  }

  TEST_CASE("row_bytes: multiples, negatives and overflow") {
    CHECK(row_bytes(GgmlType::F32, 7) == 28);
    CHECK(row_bytes(GgmlType::Q4_K, 4096) == 16 * 144);
    CHECK(row_bytes(GgmlType::Q8_0, 0) == 0);
    CHECK_THROWS_WITH_AS(row_bytes(GgmlType::Q4_K, 100), doctest::Contains("Q4_K"), Error);
    CHECK_THROWS_WITH_AS(row_bytes(GgmlType::Q8_0, 33), doctest::Contains("33"), Error);
    CHECK_THROWS_AS(row_bytes(GgmlType::F16, -2), Error);
    // 2^63 - 1 elements of F64 need more bytes than size_t holds.
    CHECK_THROWS_WITH_AS(row_bytes(GgmlType::F64, std::numeric_limits<int64_t>::max()),
                         doctest::Contains("F64"), Error);
  }
}
