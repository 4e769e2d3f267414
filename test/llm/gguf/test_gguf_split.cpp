// Split files: the writer cuts shards by tensor count or bytes; opening the first shard opens all
// of them and merges the tensor lists.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "llm/gguf/gguf.h"
#include "llm/gguf/split.h"
#include "llm/gguf/writer.h"
#include "test/llm/gguf/gguf_test_util.h"

using namespace ugrad;
using namespace ugrad::llm;
using ugrad::llm::test::ScratchDir;

namespace {

constexpr int kTensors = 5;

GgufWriter five_tensors(std::vector<std::vector<uint8_t>>& datas) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3");
  w.set_u32("qwen3.block_count", 5);
  datas.clear();
  for (int i = 0; i < kTensors; ++i) datas.emplace_back(34 * (i + 1), static_cast<uint8_t>(i + 1));
  for (int i = 0; i < kTensors; ++i)
    w.add_tensor_ref(fmt::format("blk.{}.ffn_up.weight", i), {32, uint64_t(i + 1)}, GgmlType::Q8_0,
                     datas[i]);
  return w;
}

}  // namespace

TEST_CASE("gguf split: shard names") {
  CHECK(gguf_split_path("/m/qwen", 0, 3) == "/m/qwen-00001-of-00003.gguf");
  auto n = parse_gguf_split_path("/m/qwen-00002-of-00003.gguf");
  REQUIRE(n);
  CHECK(n->prefix == "/m/qwen");
  CHECK(n->index == 1);
  CHECK(n->count == 3);
  CHECK(!parse_gguf_split_path("/m/qwen.gguf"));
  CHECK(!parse_gguf_split_path("/m/qwen-00004-of-00003.gguf"));
  CHECK(!parse_gguf_split_path("-00001-of-00003.gguf"));
  CHECK(!parse_gguf_split_path("x-0001-of-00003.gguf"));
}

TEST_CASE("gguf split: shards by tensor count round-trip as one file") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  auto paths = five_tensors(datas).write_split(dir.file("m"), {.max_tensors = 2});
  REQUIRE(paths.size() == 3);
  CHECK(paths[2] == dir.file("m-00003-of-00003.gguf"));
  GgufFile f = GgufFile::open(paths[0]);
  CHECK(f.shard_count() == 3);
  CHECK(f.get_string("general.architecture") == "qwen3");
  CHECK(f.get_u32("split.count") == 3);
  CHECK(f.get_u32("split.no") == 0);
  CHECK(f.get_i32("split.tensors.count") == kTensors);
  REQUIRE(f.tensors().size() == kTensors);
  const uint32_t expected_shard[kTensors] = {0, 0, 1, 1, 2};
  for (int i = 0; i < kTensors; ++i) {
    const GgufTensor& t = f.tensor(fmt::format("blk.{}.ffn_up.weight", i));
    CHECK(t.shard == expected_shard[i]);
    CHECK(std::equal(t.data.begin(), t.data.end(), datas[i].begin(), datas[i].end()));
  }
  // Other shards hold only the split keys.
  GgufFile second = GgufFile::from_buffer([&] {
    std::ifstream in(paths[1], std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }());
  CHECK(!second.has("general.architecture"));
  CHECK(second.get_u32("split.no") == 1);
  CHECK(second.tensors().size() == 2);
}

TEST_CASE("gguf split: shards by bytes, with a custom alignment") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  GgufWriter w = five_tensors(datas);
  w.set_alignment(128);
  // Sizes 34, 68, 102, 136, 170 (each padded to 128 before the next): a shard takes tensors while
  // its padded bytes plus the next tensor stay within 300, so the shards are {0,1} {2,3} {4}.
  auto paths = w.write_split(dir.file("m"), {.max_bytes = 300});
  REQUIRE(paths.size() == 3);
  GgufFile f = GgufFile::open(paths[0]);
  CHECK(f.alignment() == 128);
  REQUIRE(f.tensors().size() == kTensors);
  for (const GgufTensor& t : f.tensors())
    CHECK(reinterpret_cast<uintptr_t>(t.data.data()) % 128 == 0);
  CHECK(f.tensors()[3].shard == 1);
  CHECK(f.tensors()[4].shard == 2);
  CHECK(f.tensors()[4].data[0] == 5);
}

TEST_CASE("gguf split: a single shard is a plain file") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  auto paths = five_tensors(datas).write_split(dir.file("m"), {});
  REQUIRE(paths.size() == 1);
  GgufFile f = GgufFile::open(paths[0]);
  CHECK(f.shard_count() == 1);
  CHECK(f.tensors().size() == kTensors);
}

TEST_CASE("gguf split: a missing or wrong shard is an error naming the file") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  auto paths = five_tensors(datas).write_split(dir.file("m"), {.max_tensors = 2});
  CHECK_THROWS_WITH_AS(
      GgufFile::open(paths[1]),
      doctest::Contains(("is shard 2 of 3; open the first shard '" + paths[0] + "'").c_str()),
      Error);
  std::filesystem::rename(paths[1], dir.file("other.gguf"));
  CHECK_THROWS_WITH_AS(
      GgufFile::open(paths[0]),
      doctest::Contains(("split file '" + paths[1] + "' is missing (shard 2 of 3").c_str()), Error);
  // Shard 3 put in the place of shard 2.
  std::filesystem::copy_file(paths[2], paths[1]);
  CHECK_THROWS_WITH_AS(GgufFile::open(paths[0]),
                       doctest::Contains("says it is shard 3 of 3, expected shard 2 of 3"), Error);
  // A first shard renamed so its name no longer follows the pattern.
  std::filesystem::copy_file(paths[0], dir.file("renamed.gguf"));
  CHECK_THROWS_WITH_AS(GgufFile::open(dir.file("renamed.gguf")),
                       doctest::Contains("does not follow the shard pattern"), Error);
}

TEST_CASE("gguf split: shard contents must agree with the first shard's split keys") {
  ScratchDir dir;
  std::vector<std::vector<uint8_t>> datas;
  auto paths = five_tensors(datas).write_split(dir.file("m"), {.max_tensors = 3});
  REQUIRE(paths.size() == 2);
  // A second shard that says the right split keys but holds no tensors.
  GgufWriter empty;
  empty.set_scalar<uint16_t>("split.no", 1);
  empty.set_scalar<uint16_t>("split.count", 2);
  empty.write(paths[1]);
  CHECK_THROWS_WITH_AS(GgufFile::open(paths[0]),
                       doctest::Contains("'split.tensors.count' is 5 but the 2 shards hold 3"),
                       Error);
  // A second shard repeating a tensor of the first.
  GgufWriter dup;
  dup.set_scalar<uint16_t>("split.no", 1);
  dup.set_scalar<uint16_t>("split.count", 2);
  dup.add_tensor_ref("blk.0.ffn_up.weight", {32, 1}, GgmlType::Q8_0, datas[0]);
  dup.add_tensor_ref("x", {32, 1}, GgmlType::Q8_0, datas[0]);
  dup.write(paths[1]);
  CHECK_THROWS_WITH_AS(GgufFile::open(paths[0]),
                       doctest::Contains("tensor 'blk.0.ffn_up.weight' appears in more than one "
                                         "shard"),
                       Error);
}
