// The block layouts (layout.h) as descriptions: every bit of a block belongs to exactly one
// field, reads and stores are inverse, the vectorized walk agrees with the per-index one. The
// values they decode are checked against ggml's own outputs in test_quant_ggml_vectors.
#include "llm/quant/layout.h"

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "llm/quant/blocks.h"
#include "llm/quant/iq4_tables.h"

using namespace ugrad::llm;

namespace {

const GgmlType kBlockTypes[] = {GgmlType::Q8_0, GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
                                GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K,
                                GgmlType::Q3_K, GgmlType::Q4_K,   GgmlType::Q5_K,  GgmlType::Q6_K,
                                GgmlType::Q8_K, GgmlType::IQ4_XS};

std::vector<const Field*> fields(const BlockLayout& l) {
  std::vector<const Field*> out{&l.quant};
  if (l.scale.n_planes) out.push_back(&l.scale);
  if (l.min.n_planes) out.push_back(&l.min);
  return out;
}

// How often each bit of a block is covered by the fields' planes and the float scales.
std::vector<int> coverage(const BlockLayout& l, size_t bytes) {
  std::vector<int> bits(8 * bytes, 0);
  auto span = [&](int64_t off, int64_t n) {
    for (int64_t b = 8 * off; b < 8 * (off + n); ++b) ++bits[b];
  };
  span(l.d, l.d_kind == ScaleKind::F32 ? 4 : l.d_kind == ScaleKind::F16 ? 2 : 1);
  if (l.m >= 0) span(l.m, 2);
  for (const Field* f : fields(l))
    for (int k = 0; k < f->n_planes; ++k)
      for (int64_t i = 0; i < f->count(); ++i) {
        // Find the plane's bits of index i by storing all ones into an empty block.
        std::vector<uint8_t> block(bytes, 0);
        Field one = *f;
        one.planes[0] = f->planes[k];
        one.n_planes = 1;
        one.store(block.data(), i, 0xFF);
        for (size_t b = 0; b < 8 * bytes; ++b) bits[b] += (block[b / 8] >> (b % 8)) & 1;
      }
  return bits;
}

}  // namespace

TEST_SUITE("quant_formats") {
  TEST_CASE("layout: every bit of a block is in exactly one field") {
    for (GgmlType t : kBlockTypes) {
      CAPTURE(format_of(t).name);
      const BlockLayout* l = block_layout(t);
      REQUIRE(l != nullptr);
      const QuantFormat& f = format_of(t);
      CHECK(l->quant.count() == f.block_size);
      CHECK(f.block_size % l->sub_block == 0);
      if (l->scale.n_planes) CHECK(l->scale.count() == f.block_size / l->sub_block);
      if (l->min.n_planes) CHECK(l->min.count() == f.block_size / l->sub_block);
      const std::vector<int> bits = coverage(*l, f.block_bytes);
      for (size_t b = 0; b < bits.size(); ++b) {
        CAPTURE(b);
        // Q8_K's bsums are sums of its quants, kept for dot products, not a field.
        const bool bsums = t == GgmlType::Q8_K && b / 8 >= q8_k::kBsums;
        CHECK(bits[b] == (bsums ? 0 : 1));
      }
    }
    CHECK(block_layout(GgmlType::F16) == nullptr);
    CHECK(block_layout(GgmlType::IQ2_XXS) == nullptr);
  }

  TEST_CASE("layout: raw_all agrees with raw, and store inverts it") {
    std::mt19937 rng(7);
    for (GgmlType t : kBlockTypes) {
      CAPTURE(format_of(t).name);
      const BlockLayout& l = *block_layout(t);
      const size_t bytes = format_of(t).block_bytes;
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<uint8_t> block(bytes), copy(bytes, 0);
        for (uint8_t& b : block) b = static_cast<uint8_t>(rng());
        for (const Field* f : fields(l)) {
          std::vector<uint8_t> all(f->count());
          f->raw_all(block.data(), all.data());
          for (int64_t i = 0; i < f->count(); ++i) {
            REQUIRE(all[i] == f->raw(block.data(), i));
            CHECK(f->read(block.data(), i) == f->value(all[i]));
          }
          f->store_all(copy.data(), all.data());
        }
        // The float scales are copied as bytes; every other byte comes from the stores.
        for (int64_t b = 0; b < (l.d_kind == ScaleKind::F32 ? 4 : 2); ++b)
          copy[l.d + b] = block[l.d + b];
        if (l.m >= 0) copy[l.m] = block[l.m], copy[l.m + 1] = block[l.m + 1];
        const size_t described = t == GgmlType::Q8_K ? q8_k::kBsums : bytes;
        for (size_t b = 0; b < described; ++b) {
          CAPTURE(b);
          CHECK(copy[b] == block[b]);
        }
      }
    }
  }

  TEST_CASE("layout: values follow the format's formula") {
    // Q4_K block: d = 1, dmin = 0.5, sub-block 5's scale 9 and min 3 (j >= 4: low nibbles in
    // bytes 8-11, top bits in bytes 0-7), element 5*32 + 7 with quant 11: 1*9*11 - 0.5*3 = 97.5.
    std::vector<uint8_t> block(q4_k::kBytes, 0);
    store_f16(block.data() + q4_k::kD, 1.0f);
    store_f16(block.data() + q4_k::kDmin, 0.5f);
    const BlockLayout& l = *block_layout(GgmlType::Q4_K);
    l.scale.store(block.data(), 5, 9);
    l.min.store(block.data(), 5, 3);
    l.quant.store(block.data(), 5 * 32 + 7, 11);
    CHECK(block[q4_k::kScales + 9] == (9 | 3 << 4));    // s[j + 4]: scale and min low nibbles
    CHECK(block[q4_k::kQs + 2 * 32 + 7] == (11 << 4));  // sub-block 5: high nibbles of group 2
    std::vector<float> y(kQK_K);
    decode_blocks(l, block.data(), y.data(), 1);
    CHECK(y[5 * 32 + 7] == 97.5f);
    CHECK(y[5 * 32 + 8] == -1.5f);
    CHECK(y[0] == 0.0f);
  }

  TEST_CASE("layout: a table's level index is taken mod 16") {
    // The reference dequantizer tabulates all 256 raw bytes; a table format's upper ones must not
    // index past its 16 levels (UBSan found the read past the end in CI).
    CHECK(level_value(Levels::IQ4NL, 0x13) == float(kIQ4NLValues[3]));
    CHECK(level_value(Levels::MXFP4, 0xFF) == float(kMXFP4Values[15]));
    CHECK(level_value(Levels::Integer, 200) == 200.0f);
  }
}
