// Helpers for test_llm_config: a hand-built Qwen3 GGUF whose metadata and tensor list each test
// can edit before building it, temporary files, and error capture.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "llm/gguf/gguf.h"
#include "llm/quant/formats.h"

namespace ugrad::llm::test {

struct TensorSpec {
  TensorSpec(std::string n, std::vector<uint64_t> d, GgmlType t = GgmlType::F32)
      : name(std::move(n)), dims(std::move(d)), type(t) {}
  std::string name;
  std::vector<uint64_t> dims;
  GgmlType type = GgmlType::F32;
  std::vector<float> values;  // F32 data; empty means zeros (any type)
};

/// A Qwen3 model as editable metadata and tensor lists. build() writes it to an in-memory GGUF.
struct ToyModel {
  using Value = std::variant<uint32_t, float, std::string>;
  std::map<std::string, Value> metadata;
  std::vector<TensorSpec> tensors;

  /// The spec of a tensor by name (Error if absent).
  TensorSpec& tensor(const std::string& name);
  const TensorSpec& tensor(const std::string& name) const;
  /// Removes a tensor by name (Error if absent).
  void remove_tensor(const std::string& name);
  GgufFile build() const;
};

/// A consistent qwen3 toy: every key of docs/qwen.md#qwen3-metadata, a tokens array of `vocab`
/// entries, zero tensors.
ToyModel toy_qwen3(uint32_t n_layers = 2, uint32_t dim = 8, uint32_t n_heads = 2,
                   uint32_t n_kv_heads = 1, uint32_t head_dim = 4, uint32_t ffn_dim = 12,
                   uint32_t vocab = 10);

/// Sizes of a qwen35 toy (docs/qwen.md#qwen35-metadata, docs/qwen.md#qwen35-tensors).
struct ToyQwen35Shape {
  uint32_t n_layers = 4, dim = 8, n_heads = 2, n_kv_heads = 1, head_dim = 4, n_rot = 2,
           ffn_dim = 12, vocab = 10;
  uint32_t interval = 2, conv_kernel = 3, key_heads = 1, value_heads = 2, key_head_dim = 4,
           value_head_dim = 3;
};

/// A consistent qwen35 toy: every key of docs/qwen.md#qwen35-metadata (no MTP layers), zero
/// tensors; layer i is full attention iff (i + 1) % interval == 0.
ToyModel toy_qwen35(const ToyQwen35Shape& shape = {});

/// Reads the config and the weights index of the toy the way a model does (Errors propagate).
void load_config_and_weights(const ToyModel& m);

/// One way to break a consistent toy, and the substrings its Error message must contain.
struct ErrorCase {
  const char* what;
  std::function<void(ToyModel&)> edit;
  std::vector<std::string> expected;
};
/// Applies each case to a copy of `base` and checks that loading fails naming what it expects.
void check_error_cases(const ToyModel& base, const std::vector<ErrorCase>& cases);

/// The formulas the hand checks of the reference forwards need, over a toy's F32 values, written
/// independently of the references: RMSNorm, matrix-vector product, embedding row.
struct ToyMath {
  using Vec = std::vector<double>;
  const ToyModel& m;
  size_t dim;
  const std::vector<float>& w(const std::string& name) const { return m.tensor(name).values; }
  Vec rms(Vec x, const std::string& norm) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double scale = 1.0 / std::sqrt(ss / double(x.size()) + 1e-6);
    for (size_t i = 0; i < x.size(); ++i) x[i] *= scale * w(norm)[i];
    return x;
  }
  Vec mv(const std::string& name, const Vec& x, size_t out) const {
    Vec y(out, 0.0);
    for (size_t o = 0; o < out; ++o)
      for (size_t i = 0; i < x.size(); ++i) y[o] += w(name)[o * x.size() + i] * x[i];
    return y;
  }
  Vec embed(int32_t t) const {
    const auto& e = w("token_embd.weight");
    return Vec(e.begin() + t * dim, e.begin() + (t + 1) * dim);
  }
};

/// The message of the Error `fn` throws, or "" if it throws nothing.
std::string error_of(const std::function<void()>& fn);

/// A path in a fresh per-process temporary directory (removed at exit).
std::string temp_path(const std::string& name);

}  // namespace ugrad::llm::test
