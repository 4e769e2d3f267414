// Writes the fuzzer's seed corpus: small GGUF files from the writer covering every value type,
// several tensor types and alignments, plus a hand-built version 2 file.
// Usage: fuzz_gguf_seeds <output-dir>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "llm/gguf/writer.h"
#include "test/llm/gguf/gguf_test_util.h"

using namespace ugrad::llm;

namespace {

void save(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> filled(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output-dir>\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  try {
    {  // every scalar and array type, no tensors
      GgufWriter w;
      w.set_scalar<uint8_t>("u8", 1);
      w.set_scalar<int8_t>("i8", -1);
      w.set_scalar<uint16_t>("u16", 2);
      w.set_scalar<int16_t>("i16", -2);
      w.set_u32("u32", 3);
      w.set_i32("i32", -3);
      w.set_f32("f32", 0.5f);
      w.set_bool("bool", true);
      w.set_string("str", "qwen3");
      w.set_u64("u64", 4);
      w.set_scalar<int64_t>("i64", -4);
      w.set_scalar<double>("f64", 0.25);
      std::vector<int32_t> ints{1, 2, 3};
      w.set_array<int32_t>("a.i32", ints);
      std::vector<float> floats{1.0f, 2.0f};
      w.set_array<float>("a.f32", floats);
      std::vector<std::string> strs{"a", "", "<|im_end|>"};
      w.set_array_strings("a.str", strs);
      GgufArray inner;
      inner.elem_type = GgufType::STRING;
      inner.count = 1;
      inner.strings = {"x"};
      GgufArray outer;
      outer.elem_type = GgufType::ARRAY;
      outer.count = 2;
      outer.arrays = {GgufValue(inner), GgufValue(inner)};
      w.set("a.nested", GgufValue(outer));
      save(dir, "all_types.gguf", w.to_bytes());
    }
    {  // a tiny model-shaped file with several tensor types
      GgufWriter w;
      w.set_string("general.architecture", "qwen3");
      w.set_u32("qwen3.block_count", 1);
      w.add_tensor("token_embd.weight", {32, 2}, GgmlType::Q8_0, filled(68, 1));
      w.add_tensor("blk.0.attn_norm.weight", {4}, GgmlType::F32, filled(16, 2));
      w.add_tensor("blk.0.ffn_up.weight", {256}, GgmlType::Q4_K, filled(144, 3));
      w.add_tensor("blk.0.ffn_down.weight", {8, 2}, GgmlType::F16, filled(32, 4));
      save(dir, "model.gguf", w.to_bytes());
    }
    {  // non-default alignment
      GgufWriter w;
      w.set_alignment(64);
      w.add_tensor("a", {3}, GgmlType::F32, filled(12, 5));
      w.add_tensor("b", {32}, GgmlType::Q4_0, filled(18, 6));
      save(dir, "align64.gguf", w.to_bytes());
    }
    {  // version 2, built by hand
      test::Bytes b;
      b.header(2, 1, 1).kv_str("general.architecture", "llama").tensor("w", {4}, 0, 0).align(32);
      b.zeros(16);
      save(dir, "v2.gguf", b.b);
    }
    save(dir, "empty.gguf", GgufWriter().to_bytes());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_gguf_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
