// Bad input: every class of malformed file gives an Error that names the problem, truncation at
// every byte and thousands of random mutations never crash.
#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "llm/gguf/gguf.h"
#include "llm/gguf/writer.h"
#include "test/llm/gguf/gguf_test_util.h"

using namespace ugrad;
using namespace ugrad::llm;
using ugrad::llm::test::Bytes;
using ugrad::llm::test::ScratchDir;
using ugrad::llm::test::touch_gguf;

namespace {

constexpr uint32_t kF32 = 0, kQ8_0 = 8;

GgufFile parse(const Bytes& b) { return GgufFile::from_bytes(b.b); }

// A file with one F32 tensor of `dims` at `offset` and enough zero data for `data_bytes`.
Bytes one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
  Bytes b;
  b.header(3, 1, 0).tensor("blk.3.attn_q.weight", std::move(dims), type, offset).align(32);
  return b.zeros(data_bytes);
}

// A small valid file whose last tensor ends exactly at the end of the file, so every proper
// prefix is invalid.
std::vector<uint8_t> small_valid_file() {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_u32("qwen3.block_count", 2);
  w.set_f32("qwen3.rope.freq_base", 1e6f);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  std::vector<std::string> tokens{"a", "bc", "<|im_start|>"};
  w.set_array_strings("tokenizer.ggml.tokens", tokens);
  std::vector<int32_t> types{1, 1, 3};
  w.set_array<int32_t>("tokenizer.ggml.token_type", types);
  std::vector<uint8_t> q(34 * 2, 0x11), f(32, 0x22);
  w.add_tensor("blk.0.attn_q.weight", {32, 2}, GgmlType::Q8_0, q);
  w.add_tensor("output_norm.weight", {8}, GgmlType::F32, f);
  return w.to_bytes();
}

}  // namespace

TEST_CASE("gguf errors: header") {
  Bytes magic;
  magic.b = {'G', 'G', 'J', 'T'};
  magic.u32(3).u64(0).u64(0);
  CHECK_THROWS_WITH_AS(parse(magic), doctest::Contains("bad magic 0x544a4747"), Error);
  Bytes v1, v4, swapped, v0;
  v1.header(1, 0, 0);
  v4.header(4, 0, 0);
  v0.header(0, 0, 0);
  swapped.header(0x03000000, 0, 0);
  CHECK_THROWS_WITH_AS(parse(v1), doctest::Contains("version 1 is not supported"), Error);
  CHECK_THROWS_WITH_AS(parse(v4), doctest::Contains("unsupported GGUF version 4"), Error);
  CHECK_THROWS_WITH_AS(parse(v0), doctest::Contains("unsupported GGUF version 0"), Error);
  CHECK_THROWS_WITH_AS(parse(swapped), doctest::Contains("big-endian"), Error);
  Bytes tiny;
  tiny.b = {'G', 'G', 'U', 'F', 3, 0};
  CHECK_THROWS_WITH_AS(parse(tiny), doctest::Contains("6 bytes, smaller than the 24-byte"), Error);
  CHECK_THROWS_WITH_AS(GgufFile::from_bytes({}), doctest::Contains("truncated file: 0 bytes"),
                       Error);
}

TEST_CASE("gguf errors: counts and lengths that overrun the file") {
  Bytes many_kv, many_tensors, long_key, long_value, long_array, long_strings;
  many_kv.header(3, 0, 1000000);
  CHECK_THROWS_WITH_AS(parse(many_kv), doctest::Contains("header claims 1000000 metadata entries"),
                       Error);
  many_tensors.header(3, 1ull << 60, 0);
  CHECK_THROWS_WITH_AS(parse(many_tensors),
                       doctest::Contains("header claims 1152921504606846976 tensors"), Error);
  long_key.header(3, 0, 1).u64(1000000000000ull).zeros(8);
  CHECK_THROWS_WITH_AS(parse(long_key), doctest::Contains("key has length 1000000000000"), Error);
  long_value.header(3, 0, 1).str("general.name").u32(8).u64(100).zeros(4);
  CHECK_THROWS_WITH_AS(
      parse(long_value),
      doctest::Contains("metadata key 'general.name', string value has length 100"), Error);
  long_array.header(3, 0, 1).str("a").u32(9).u32(4).u64(1ull << 62).zeros(16);
  CHECK_THROWS_WITH_AS(parse(long_array),
                       doctest::Contains("'a': array of 4611686018427387904 UINT32"), Error);
  long_strings.header(3, 0, 1).str("tokens").u32(9).u32(8).u64(3).str("ok").u64(99).zeros(16);
  CHECK_THROWS_WITH_AS(parse(long_strings),
                       doctest::Contains("array string 1 has length 99 but only 16 bytes remain"),
                       Error);
}

TEST_CASE("gguf errors: metadata values") {
  Bytes bad_type, bad_elem, bad_bool, bad_bool_array, dup, align_np2, align_type, deep;
  bad_type.header(3, 0, 1).str("k").u32(13).u32(0);
  CHECK_THROWS_WITH_AS(parse(bad_type), doctest::Contains("'k' has unknown value type 13"), Error);
  bad_elem.header(3, 0, 1).str("k").u32(9).u32(99).u64(0);
  CHECK_THROWS_WITH_AS(parse(bad_elem), doctest::Contains("'k' has unknown array element type 99"),
                       Error);
  bad_bool.header(3, 0, 1).str("flag").u32(7).u8(2);
  CHECK_THROWS_WITH_AS(parse(bad_bool), doctest::Contains("'flag': BOOL value is 2"), Error);
  bad_bool_array.header(3, 0, 1).str("flags").u32(9).u32(7).u64(2).u8(1).u8(9);
  CHECK_THROWS_WITH_AS(parse(bad_bool_array), doctest::Contains("BOOL array element 1 is 9"),
                       Error);
  dup.header(3, 0, 2).kv_u32("a.b", 1).kv_str("a.b", "x");
  CHECK_THROWS_WITH_AS(parse(dup), doctest::Contains("duplicate metadata key 'a.b'"), Error);
  align_np2.header(3, 0, 1).kv_u32("general.alignment", 24);
  CHECK_THROWS_WITH_AS(parse(align_np2),
                       doctest::Contains("'general.alignment' is 24, which is not"), Error);
  align_type.header(3, 0, 1).str("general.alignment").u32(10).u64(32);
  CHECK_THROWS_WITH_AS(parse(align_type),
                       doctest::Contains("'general.alignment' has type UINT64, expected UINT32"),
                       Error);
  deep.header(3, 0, 1).str("deep").u32(9);
  for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
  deep.u32(4).u64(0);
  CHECK_THROWS_WITH_AS(parse(deep), doctest::Contains("'deep' nests arrays deeper than 8"), Error);
}

TEST_CASE("gguf errors: tensor records") {
  CHECK_THROWS_WITH_AS(parse(one_tensor({1, 1, 1, 1, 1}, kF32, 0, 4)),
                       doctest::Contains("'blk.3.attn_q.weight' has 5 dimensions"), Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({4, 0}, kF32, 0, 16)),
                       doctest::Contains("has dimension 1 = 0 in [4, 0]"), Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({4, ~0ull}, kF32, 0, 16)),
                       doctest::Contains("negative dimension 1 = -1"), Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({1ull << 40, 1ull << 40}, kF32, 0, 16)),
                       doctest::Contains("element count of dims [1099511627776, 1099511627776] "
                                         "overflows"),
                       Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({1ull << 31, 1ull << 31}, kF32, 0, 16)),
                       doctest::Contains("the byte size of F32"), Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({32}, 4, 0, 32)),
                       doctest::Contains("'blk.3.attn_q.weight' has unknown ggml type id 4"),
                       Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({32}, 1000, 0, 32)),
                       doctest::Contains("unknown ggml type id 1000"), Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({48, 2}, kQ8_0, 0, 34 * 3)),
                       doctest::Contains("row length ne[0] = 48, not a multiple of Q8_0's block "
                                         "size 32"),
                       Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({4}, kF32, 16, 64)),
                       doctest::Contains("offset 16, not a multiple of the alignment 32"), Error);
  Bytes short_data = one_tensor({200}, kF32, 0, 0);
  size_t data_start = short_data.b.size();
  short_data.zeros(700);
  CHECK_THROWS_WITH_AS(parse(short_data),
                       doctest::Contains(fmt::format("tensor 'blk.3.attn_q.weight' ends at byte {} "
                                                     "but the file has {}",
                                                     data_start + 800, data_start + 700)
                                             .c_str()),
                       Error);
  CHECK_THROWS_WITH_AS(parse(one_tensor({4}, kF32, ~0ull - 31, 16)),
                       doctest::Contains("ends beyond 2^64"), Error);
  Bytes no_data;
  no_data.header(3, 1, 0).tensor("w", {4}, kF32, 0);
  CHECK_THROWS_WITH_AS(parse(no_data), doctest::Contains("data section starts at byte 64"), Error);
  Bytes truncated_record;
  truncated_record.header(3, 1, 0).str("w").u32(2).u64(4).zeros(4);
  CHECK_THROWS_WITH_AS(parse(truncated_record),
                       doctest::Contains("truncated file: tensor 'w', dimension needs 8 bytes"),
                       Error);
}

TEST_CASE("gguf errors: tensors that collide") {
  Bytes overlap;
  overlap.header(3, 2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).align(32).zeros(64);
  CHECK_THROWS_WITH_AS(
      parse(overlap), doctest::Contains("tensors 'a' (data bytes 0..64) and 'b' (from 32) overlap"),
      Error);
  Bytes same_offset;
  same_offset.header(3, 2, 0)
      .tensor("a", {8}, kF32, 0)
      .tensor("b", {8}, kF32, 0)
      .align(32)
      .zeros(32);
  CHECK_THROWS_WITH_AS(parse(same_offset), doctest::Contains("overlap"), Error);
  Bytes dup;
  dup.header(3, 2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).align(32).zeros(64);
  CHECK_THROWS_WITH_AS(parse(dup), doctest::Contains("duplicate tensor name 'w'"), Error);
  // Holes and reordering are accepted (ggml's writer never makes them, but they are unambiguous).
  Bytes reordered;
  reordered.header(3, 2, 0)
      .tensor("a", {8}, kF32, 64)
      .tensor("b", {8}, kF32, 0)
      .align(32)
      .zeros(96);
  CHECK(parse(reordered).tensor("a").offset == 64);
}

TEST_CASE("gguf errors: files on disk") {
  ScratchDir dir;
  CHECK_THROWS_WITH_AS(GgufFile::open(dir.file("absent.gguf")),
                       doctest::Contains(("cannot open '" + dir.file("absent.gguf") + "'").c_str()),
                       Error);
  { std::ofstream(dir.file("empty.gguf")); }
  CHECK_THROWS_WITH_AS(
      GgufFile::open(dir.file("empty.gguf")),
      doctest::Contains(("'" + dir.file("empty.gguf") + "': truncated file: 0 bytes").c_str()),
      Error);
  CHECK_THROWS_WITH_AS(GgufFile::open(dir.file("")), doctest::Contains("not a regular file"),
                       Error);
}

// True when `s` is valid UTF-8 without control characters (C0, DEL, C1): safe on a terminal.
bool printable_message(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || i + len > s.size() || c < 0x20 || c == 0x7F) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    if (c == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0) return false;
    i += len;
  }
  return true;
}

TEST_CASE(
    "gguf errors: a corrupted key length gives a printable message that ends with the fault") {
  // Issue #28: one flipped byte at offset 24 (the low byte of the first key's length) made the
  // key run into the bytes after it; the message printed them raw (a control character, then
  // nothing after the first NUL byte), so it never said what was wrong.
  const std::vector<uint8_t> full = small_valid_file();
  REQUIRE(full[24] == std::string_view("general.architecture").size());
  std::vector<uint8_t> flipped = full;
  flipped[24] ^= 0x02;  // 20 -> 22: the key takes in the type tag's first bytes, 08 00
  std::string message;
  try {
    GgufFile::from_bytes(flipped);
  } catch (const Error& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(printable_message(message));
  CHECK(message ==
        "gguf: metadata key 'general.architecture\\x08\\x00' has unknown value type 327680");
  // Every other value of that byte: an Error whose message is printable (with v >= 21 the key
  // holds control and NUL bytes, with 38 it takes in the text of the value, then garbage).
  for (int v = 0; v < 256; ++v) {
    std::vector<uint8_t> m = full;
    m[24] = static_cast<uint8_t>(v);
    try {
      GgufFile::from_bytes(m);
    } catch (const Error& e) {
      CAPTURE(v);
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(printable_message(what));
    }
  }
}

TEST_CASE("gguf errors: truncation at every byte offset throws Error") {
  std::vector<uint8_t> full = small_valid_file();
  REQUIRE(touch_gguf(full) != 0);
  for (size_t n = 0; n < full.size(); ++n) {
    // An exactly sized heap copy, so ASan sees any read past the end.
    std::vector<uint8_t> prefix(full.begin(), full.begin() + n);
    CHECK_THROWS_AS(GgufFile::from_bytes(prefix), Error);
  }
}

TEST_CASE("gguf errors: random mutations never crash") {
  std::vector<uint8_t> full = small_valid_file();
  std::mt19937_64 rng(12345);
  constexpr int kMutations = 4000;
  const uint64_t kInteresting[] = {0,
                                   1,
                                   31,
                                   32,
                                   255,
                                   0xffffffffull,
                                   1ull << 32,
                                   1ull << 63,
                                   ~0ull,
                                   full.size(),
                                   full.size() / 2};
  int parsed = 0;
  for (int i = 0; i < kMutations; ++i) {
    std::vector<uint8_t> m = full;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % m.size();
      switch (rng() % 3) {
        case 0:
          m[pos] = static_cast<uint8_t>(rng());
          break;
        case 1:
          m[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        default: {  // overwrite a (possibly) count/offset field with an interesting value
          uint64_t v = kInteresting[rng() % std::size(kInteresting)];
          size_t width = (rng() % 2) ? 8 : 4;
          for (size_t k = 0; k < width && pos + k < m.size(); ++k)
            m[pos + k] = uint8_t(v >> (8 * k));
        }
      }
    }
    if (rng() % 8 == 0) m.resize(rng() % m.size());
    try {
      parsed += touch_gguf(m) != 0;
    } catch (const std::exception& e) {
      FAIL("mutation ", i, " raised a non-Error exception: ", e.what());
    }
  }
  MESSAGE(parsed, " of ", kMutations, " mutated files still parsed");
}
