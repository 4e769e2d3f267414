// Writer -> reader round trips, a hand-built v2 file, and the writer's byte layout checked
// against the format definition (docs/gguf.md#file-layout).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <random>

#include "llm/gguf/gguf.h"
#include "llm/gguf/mapped_file.h"
#include "llm/gguf/writer.h"
#include "test/llm/gguf/gguf_test_util.h"

using namespace ugrad;
using namespace ugrad::llm;
using ugrad::llm::test::Bytes;
using ugrad::llm::test::ScratchDir;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(rng());
  return v;
}

uint64_t nbytes_of(GgmlType t, const std::vector<uint64_t>& dims) {
  const QuantFormat& f = format_of(t);
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  return n / f.block_size * f.block_bytes;
}

struct TensorSpec {
  const char* name;
  std::vector<uint64_t> dims;
  GgmlType type;
};

const std::vector<TensorSpec> kTensors = {
    {"token_embd.weight", {64, 3}, GgmlType::Q8_0},
    {"blk.0.attn_norm.weight", {7}, GgmlType::F32},
    {"blk.0.ffn_up.weight", {256, 2, 1}, GgmlType::Q4_K},
    {"blk.0.ffn_down.weight", {32, 3, 2, 1}, GgmlType::Q4_0},
    {"half", {5, 3}, GgmlType::F16},
    {"bf", {3}, GgmlType::BF16},
    {"ids", {5}, GgmlType::I32},
    {"iq", {256}, GgmlType::IQ4_XS},
};

// A writer holding every value type and the tensors above.
GgufWriter full_writer(std::vector<std::vector<uint8_t>>& datas) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_scalar<uint8_t>("t.u8", 250);
  w.set_scalar<int8_t>("t.i8", -100);
  w.set_scalar<uint16_t>("t.u16", 65000);
  w.set_scalar<int16_t>("t.i16", -32000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_f32("t.f32", 1.5e-6f);
  w.set_bool("t.bool", true);
  w.set_string("t.string", "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c");
  w.set_string("t.empty", "");
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_scalar<int64_t>("t.i64", -9000000000000000000ll);
  w.set_scalar<double>("t.f64", 3.141592653589793);
  std::array<uint8_t, 3> u8s{1, 2, 255};
  std::array<int8_t, 2> i8s{-1, 7};
  std::array<uint16_t, 2> u16s{1, 65535};
  std::array<int16_t, 2> i16s{-5, 5};
  std::array<uint32_t, 3> u32s{0, 1, 4294967295u};
  std::array<int32_t, 4> i32s{-1, 0, 1, 2147483647};
  std::array<float, 2> f32s{0.5f, -2.25f};
  std::array<bool, 3> bools{true, false, true};
  std::array<uint64_t, 1> u64s{1ull << 63};
  std::array<int64_t, 2> i64s{-(1ll << 62), 3};
  std::array<double, 2> f64s{1e300, -0.0};
  w.set_array<uint8_t>("a.u8", u8s);
  w.set_array<int8_t>("a.i8", i8s);
  w.set_array<uint16_t>("a.u16", u16s);
  w.set_array<int16_t>("a.i16", i16s);
  w.set_array<uint32_t>("a.u32", u32s);
  w.set_array<int32_t>("a.i32", i32s);
  w.set_array<float>("a.f32", f32s);
  w.set_array<bool>("a.bool", bools);
  w.set_array<uint64_t>("a.u64", u64s);
  w.set_array<int64_t>("a.i64", i64s);
  w.set_array<double>("a.f64", f64s);
  w.set_array<int32_t>("a.empty", {});
  std::vector<std::string> strs{"a", "", "\xf0\x9f\x98\x80 emoji", std::string(300, 'x')};
  w.set_array_strings("a.strings", strs);
  // Nested: [[1, 2], [], [3]] as INT32, and [["x", "y"]] as STRING.
  std::array<int32_t, 2> n0{1, 2};
  std::array<int32_t, 1> n2{3};
  auto i32_array = [](std::span<const int32_t> v) {
    GgufArray a;
    a.elem_type = GgufType::I32;
    a.count = v.size();
    a.raw = {reinterpret_cast<const uint8_t*>(v.data()), v.size_bytes()};
    return GgufValue(std::move(a));
  };
  GgufArray nested;
  nested.elem_type = GgufType::ARRAY;
  nested.count = 3;
  nested.arrays = {i32_array(n0), i32_array({}), i32_array(n2)};
  w.set("a.nested", GgufValue(nested));
  GgufArray inner_s;
  inner_s.elem_type = GgufType::STRING;
  inner_s.count = 2;
  inner_s.strings = {"x", "y"};
  GgufArray nested_s;
  nested_s.elem_type = GgufType::ARRAY;
  nested_s.count = 1;
  nested_s.arrays = {GgufValue(inner_s)};
  w.set("a.nested_strings", GgufValue(nested_s));

  datas.clear();
  for (size_t i = 0; i < kTensors.size(); ++i)
    datas.push_back(random_bytes(nbytes_of(kTensors[i].type, kTensors[i].dims), 100 + i));
  for (size_t i = 0; i < kTensors.size(); ++i)
    w.add_tensor_ref(kTensors[i].name, kTensors[i].dims, kTensors[i].type, datas[i]);
  return w;
}

// `mapped`: the image came from mmap (page-aligned), so tensor data is aligned in memory too.
void check_full(const GgufFile& f, const std::vector<std::vector<uint8_t>>& datas, bool mapped) {
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.get_string("general.architecture") == "qwen3");
  CHECK(f.get("t.u8").as<uint8_t>() == 250);
  CHECK(f.get("t.i8").as<int8_t>() == -100);
  CHECK(f.get("t.u16").as<uint16_t>() == 65000);
  CHECK(f.get("t.i16").as<int16_t>() == -32000);
  CHECK(f.get_u32("t.u32") == 4000000000u);
  CHECK(f.get_i32("t.i32") == -2000000000);
  CHECK(f.get_f32("t.f32") == 1.5e-6f);
  CHECK(f.get_bool("t.bool"));
  CHECK(f.get_string("t.string") == "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c");
  CHECK(f.get_string("t.empty").empty());
  CHECK(f.get_u64("t.u64") == 18000000000000000000ull);
  CHECK(f.get_i64("t.i64") == -9000000000000000000ll);
  CHECK(f.get_f64("t.f64") == 3.141592653589793);
  // Integer getters convert between widths when the value fits.
  CHECK(f.get_u32("t.u8") == 250);
  CHECK(f.get_i64("t.i16") == -32000);
  CHECK(f.get_u64("t.u32") == 4000000000u);

  CHECK(f.get_array_u32("a.u8") == std::vector<uint32_t>{1, 2, 255});
  CHECK(f.get_array_i32("a.i8") == std::vector<int32_t>{-1, 7});
  CHECK(f.get_array_u32("a.u16") == std::vector<uint32_t>{1, 65535});
  CHECK(f.get_array_i32("a.i16") == std::vector<int32_t>{-5, 5});
  CHECK(f.get_array_u32("a.u32") == std::vector<uint32_t>{0, 1, 4294967295u});
  CHECK(f.get_array_i32("a.i32") == std::vector<int32_t>{-1, 0, 1, 2147483647});
  CHECK(f.get_array_f32("a.f32") == std::vector<float>{0.5f, -2.25f});
  const GgufArray& bools = f.get_array("a.bool");
  REQUIRE(bools.count == 3);
  CHECK((bools.bool_at(0) && !bools.bool_at(1) && bools.bool_at(2)));
  CHECK(f.get_array("a.u64").elem_type == GgufType::U64);
  CHECK(gguf_load_le<uint64_t>(f.get_array("a.u64").raw.data()) == (1ull << 63));
  CHECK(f.get_array_i64("a.i64") == std::vector<int64_t>{-(1ll << 62), 3});
  CHECK(f.get_array("a.f64").float_at(0) == 1e300);
  CHECK(f.get_array_i32("a.empty").empty());
  auto strs = f.get_array_strings("a.strings");
  REQUIRE(strs.size() == 4);
  CHECK(strs[0] == "a");
  CHECK(strs[1].empty());
  CHECK(strs[2] == "\xf0\x9f\x98\x80 emoji");
  CHECK(strs[3] == std::string(300, 'x'));
  const GgufArray& nested = f.get_array("a.nested");
  REQUIRE(nested.elem_type == GgufType::ARRAY);
  REQUIRE(nested.arrays.size() == 3);
  CHECK(nested.arrays[0].as<GgufArray>().int_at(1) == 2);
  CHECK(nested.arrays[1].as<GgufArray>().count == 0);
  CHECK(nested.arrays[2].as<GgufArray>().int_at(0) == 3);
  const GgufArray& ns = f.get_array("a.nested_strings");
  REQUIRE(ns.arrays.size() == 1);
  CHECK(ns.arrays[0].as<GgufArray>().strings == std::vector<std::string_view>{"x", "y"});

  REQUIRE(f.tensors().size() == kTensors.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < kTensors.size(); ++i) {
    const GgufTensor& t = f.tensors()[i];
    CHECK(t.name == kTensors[i].name);
    CHECK(t.dims == kTensors[i].dims);
    CHECK(t.type == kTensors[i].type);
    CHECK(t.offset == expected_offset);
    CHECK(t.nbytes == datas[i].size());
    CHECK(std::equal(t.data.begin(), t.data.end(), datas[i].begin(), datas[i].end()));
    if (mapped) CHECK(reinterpret_cast<uintptr_t>(t.data.data()) % 32 == 0);
    CHECK(f.find_tensor(kTensors[i].name) == &t);
    expected_offset += (t.nbytes + 31) / 32 * 32;
  }
  CHECK(f.find_tensor("nope") == nullptr);
}

}  // namespace

TEST_CASE("gguf: every value type and several tensor types round-trip through memory") {
  std::vector<std::vector<uint8_t>> datas;
  GgufWriter w = full_writer(datas);
  std::vector<uint8_t> image = w.to_bytes();
  check_full(GgufFile::from_bytes(image), datas, false);
  check_full(GgufFile::from_buffer(image), datas, false);
}

TEST_CASE("gguf: a written file opens mapped or read and survives the GgufFile being copied") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  full_writer(datas).write(dir.file("m.gguf"));
  for (FileMemory how : {FileMemory::Mapped, FileMemory::Read}) {
    CAPTURE(static_cast<int>(how));
    std::optional<GgufFile> copy;
    {
      GgufFile f = GgufFile::open(dir.file("m.gguf"), how);
      check_full(f, datas, true);
      copy = f;
    }
    check_full(*copy, datas, true);
    CHECK(copy->shard_count() == 1);
  }
}

TEST_CASE("gguf: a file read into memory starts on a huge-page boundary and holds its bytes") {
  ScratchDir dir;
  std::vector<uint8_t> bytes((size_t{5} << 20) + 123);  // more than two 2 MiB pages, not a multiple
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::ofstream(dir.file("blob"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  std::ofstream(dir.file("empty"), std::ios::binary).flush();
  auto read = MappedFile::open(dir.file("blob"), FileMemory::Read);
  auto mapped = MappedFile::open(dir.file("blob"), FileMemory::Mapped);
  CHECK(reinterpret_cast<uintptr_t>(read->bytes().data()) % (size_t{2} << 20) == 0);
  CHECK(std::ranges::equal(read->bytes(), bytes));
  CHECK(std::ranges::equal(mapped->bytes(), bytes));
  for (FileMemory how : {FileMemory::Mapped, FileMemory::Read}) {
    CHECK(MappedFile::open(dir.file("empty"), how)->bytes().empty());
    CHECK_THROWS_WITH_AS(MappedFile::open(dir.file("missing"), how),
                         doctest::Contains("cannot open"), Error);
    CHECK_THROWS_WITH_AS(MappedFile::open(dir.file(""), how),
                         doctest::Contains("not a regular file"), Error);
  }
}

TEST_CASE("gguf: MemAvailable is read from /proc/meminfo text, in bytes") {
  CHECK(mem_available("MemTotal:       24683520 kB\nMemFree:        23644160 kB\n"
                      "MemAvailable:   24283136 kB\nBuffers:           12 kB\n") ==
        size_t{24283136} * 1024);
  CHECK(mem_available("MemAvailable: 7 kB") == 7 * 1024);
  CHECK(mem_available("MemTotal: 5 kB\n") == SIZE_MAX);  // no such line: no limit known
  CHECK(mem_available("MemAvailable:   kB\n") == SIZE_MAX);
  CHECK(mem_available("") == SIZE_MAX);
}

TEST_CASE("gguf: metadata iteration is in file order and values render") {
  GgufWriter w;
  w.set_u32("b", 1);
  w.set_string("a", "x");
  w.set_u32("b", 2);  // replaces, keeps position
  GgufFile f = GgufFile::from_buffer(w.to_bytes());
  REQUIRE(f.metadata().size() == 2);
  CHECK(f.metadata()[0].key == "b");
  CHECK(f.metadata()[0].value.to_display_string() == "2");
  CHECK(f.metadata()[1].value.to_display_string() == "\"x\"");
  CHECK(f.tensors().empty());
}

TEST_CASE("gguf: typed getters name the key and the actual type on a mismatch") {
  GgufWriter w;
  w.set_string("s", "text");
  w.set_u64("big", 1ull << 40);
  w.set_i32("neg", -1);
  std::array<int64_t, 2> wide{1, 1ll << 40};
  w.set_array<int64_t>("wide", wide);
  GgufFile f = GgufFile::from_buffer(w.to_bytes());
  CHECK_THROWS_WITH_AS(f.get_u32("s"),
                       doctest::Contains("'s' has type STRING, expected an integer"), Error);
  CHECK_THROWS_WITH_AS(f.get_f32("s"), doctest::Contains("'s' has type STRING"), Error);
  CHECK_THROWS_WITH_AS(f.get_bool("big"), doctest::Contains("'big' has type UINT64, expected BOOL"),
                       Error);
  CHECK_THROWS_WITH_AS(f.get_u32("big"),
                       doctest::Contains("1099511627776, which does not fit in uint32"), Error);
  CHECK_THROWS_WITH_AS(f.get_u64("neg"), doctest::Contains("'neg' is INT32 -1"), Error);
  CHECK_THROWS_WITH_AS(f.get_string("missing"), doctest::Contains("'missing' is missing"), Error);
  CHECK_THROWS_WITH_AS(f.get_array_i32("wide"), doctest::Contains("element 1 is 1099511627776"),
                       Error);
  CHECK_THROWS_WITH_AS(f.get_array_strings("wide"),
                       doctest::Contains("ARRAY of INT64, expected an ARRAY of STRING"), Error);
  CHECK_THROWS_WITH_AS(f.tensor("w"), doctest::Contains("no tensor named 'w'"), Error);
  CHECK(f.get_u32_or("absent", 7) == 7);
  CHECK(f.get_f32_or("absent", 0.5f) == 0.5f);
}

TEST_CASE("gguf: a hand-built version 2 file reads") {
  Bytes b;
  b.header(2, 1, 2).kv_str("general.architecture", "llama").kv_u32("general.alignment", 16);
  b.tensor("w", {4, 2}, 0, 0).align(16);
  for (int i = 0; i < 8; ++i) b.put<float>(static_cast<float>(i));
  GgufFile f = GgufFile::from_bytes(b.b);
  CHECK(f.version() == 2);
  CHECK(f.alignment() == 16);
  CHECK(f.get_string("general.architecture") == "llama");
  const GgufTensor& t = f.tensor("w");
  CHECK(t.dims == std::vector<uint64_t>{4, 2});
  CHECK(t.n_elements() == 8);
  CHECK(gguf_load_le<float>(t.data.data() + 7 * 4) == 7.0f);
}

TEST_CASE("gguf: the writer's bytes follow the format definition") {
  // Decode the image independently of the reader: header, records, padding, data.
  GgufWriter w;
  w.set_alignment(64);
  w.set_string("general.name", "layout");
  std::vector<uint8_t> a = random_bytes(34 * 2, 1), b = random_bytes(4 * 3, 2),
                       c = random_bytes(18, 3);
  w.add_tensor("a", {32, 2}, GgmlType::Q8_0, a);
  w.add_tensor("b", {3}, GgmlType::F32, b);
  w.add_tensor("c", {32}, GgmlType::Q4_0, c);
  std::vector<uint8_t> img = w.to_bytes();
  size_t p = 0;
  auto u32 = [&] {
    uint32_t v = gguf_load_le<uint32_t>(&img.at(p + 3) - 3);
    p += 4;
    return v;
  };
  auto u64 = [&] {
    uint64_t v = gguf_load_le<uint64_t>(&img.at(p + 7) - 7);
    p += 8;
    return v;
  };
  auto str = [&] {
    uint64_t n = u64();
    std::string s(img.begin() + p, img.begin() + p + n);
    p += n;
    return s;
  };
  CHECK(std::string(img.begin(), img.begin() + 4) == "GGUF");
  p = 4;
  CHECK(u32() == 3);
  CHECK(u64() == 3);  // tensors
  CHECK(u64() == 2);  // keys
  CHECK(str() == "general.alignment");
  CHECK(u32() == 4);  // UINT32
  CHECK(u32() == 64);
  CHECK(str() == "general.name");
  CHECK(u32() == 8);  // STRING
  CHECK(str() == "layout");
  struct Rec {
    std::string name;
    uint64_t offset, size;
  };
  std::vector<Rec> recs;
  for (uint64_t size : {a.size(), b.size(), c.size()}) {
    Rec r;
    r.name = str();
    uint32_t n_dims = u32();
    for (uint32_t d = 0; d < n_dims; ++d) u64();
    u32();  // type
    r.offset = u64();
    r.size = size;
    recs.push_back(r);
  }
  CHECK(recs[0].offset == 0);
  CHECK(recs[1].offset == 128);  // 68 bytes padded to 64
  CHECK(recs[2].offset == 192);  // + 12 padded to 64
  size_t data_start = (p + 63) / 64 * 64;
  for (size_t i = p; i < data_start; ++i) CHECK(img[i] == 0);
  CHECK(img.size() == data_start + 192 + 64);
  CHECK(std::equal(a.begin(), a.end(), img.begin() + data_start));
  CHECK(std::equal(b.begin(), b.end(), img.begin() + data_start + 128));
  CHECK(std::equal(c.begin(), c.end(), img.begin() + data_start + 192));
  for (size_t i = data_start + 68; i < data_start + 128; ++i) CHECK(img[i] == 0);
  for (size_t i = data_start + 192 + 18; i < img.size(); ++i) CHECK(img[i] == 0);
}

TEST_CASE("gguf: a file without tensors has no data padding") {
  GgufWriter w;
  w.set_u32("k", 1);
  std::vector<uint8_t> img = w.to_bytes();
  CHECK(img.size() == 24 + 8 + 1 + 4 + 4);
  CHECK(GgufFile::from_bytes(img).get_u32("k") == 1);
}

TEST_CASE("gguf writer: bad tensors and keys are refused with the reason") {
  GgufWriter w;
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {32}, GgmlType::Q8_0, std::vector<uint8_t>(33)),
                       doctest::Contains("needs 34 bytes but was given 33"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {31}, GgmlType::Q8_0, std::vector<uint8_t>(34)),
                       doctest::Contains("row length 31, not a multiple of Q8_0's block size 32"),
                       Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {1, 1, 1, 1, 1}, GgmlType::F32, std::vector<uint8_t>(4)),
                       doctest::Contains("5 dimensions"), Error);
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {2, 0}, GgmlType::F32, {}),
                       doctest::Contains("invalid dims [2, 0]"), Error);
  CHECK_THROWS_WITH_AS(
      w.add_tensor(std::string(64, 'n'), {1}, GgmlType::F32, std::vector<uint8_t>(4)),
      doctest::Contains("longer than ggml's 63"), Error);
  w.add_tensor("t", {1}, GgmlType::F32, std::vector<uint8_t>(4));
  CHECK_THROWS_WITH_AS(w.add_tensor("t", {1}, GgmlType::F32, std::vector<uint8_t>(4)),
                       doctest::Contains("duplicate tensor name 't'"), Error);
  CHECK_THROWS_WITH_AS(w.set_alignment(48), doctest::Contains("48, which is not a power of two"),
                       Error);
  CHECK_THROWS_WITH_AS(w.set_u64("general.alignment", 32), doctest::Contains("must be UINT32"),
                       Error);
  CHECK_THROWS_WITH_AS(w.write("/nonexistent-dir/x.gguf"), doctest::Contains("cannot create"),
                       Error);
}
