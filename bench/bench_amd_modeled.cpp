// Modeled AMD speed of the models: one decode step and one 32-token prefill chunk of Qwen3-0.6B
// (Q8_0), Qwen3-8B (Q4_K_M), Qwen3.5-0.8B (Q4_K_M, hybrid) and Qwen3.6-27B (IQ4_XS, hybrid)
// shapes, each with the type mixture llama-quantize's preset gives the published file
// (docs/quants.md#presets: Q6_K value projections, ffn_down and head in Q4_K_M, Q5_K ones in
// IQ4_XS), and the prompts the anchors were measured with (llama-bench's pp512 for the 8B, the
// reference implementation's 401 tokens for the 27B), printed beside those measured anchors;
// with the hand-written kernels where the device
// takes them (LLM_KERNELS=0: the generic path only), run as gfx1100 code on the
// emulator (test/mockgpu) and timed by its cost model of an RX 7900 XTX. MODELED, not measured:
// no AMD card runs here (docs/rdna3.md, "Cost model").
//
// The emulator is slow, so it runs one unit of layers with real dimensions (a layer; for the
// hybrid, a group of three Gated DeltaNet layers and one attention layer) and two units, and
// scales by the unit count: unit = T(2 units) - T(1 unit), the rest of the step (embedding rows,
// final norm) = T(1 unit) - unit; the units whose types differ (the preset's layer rules) are
// grouped, and each group is modeled by a unit of its own types. The vocabulary-sized output head
// runs on its own at its real size (the units' models have a small vocabulary; their small head is
// subtracted). Launches run every k-th workgroup only (MOCKGPU_SAMPLE, counters scaled), which
// uniform workgroups allow; the bytes a sampled launch touches in a buffer are scaled with it, at
// most the buffer's size (an input every workgroup reads counts once). Weights repeat a few drawn
// rows (DemoModelOptions::distinct_rows): timings do not depend on values. Every figure is a range
// (the cost model's fast and slow corners) with the model's version and hash.
//   bench_amd_modeled [--json] [0.6b|8b|0.8b|27b ...]   (default: all; --json: one JSON object
//   per model and workload on stdout, the report on stderr)
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/env.h"
#include "bench/bench_util.h"
#include "bench/llm_bench.h"
#include "llm/config/demo_model.h"
#include "llm/kernels/linear.h"
#include "llm/models/model.h"
#include "llm/quant/presets.h"
#include "test/mockgpu/cost_model.h"
#include "test/mockgpu/launch_records.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

constexpr int64_t kChunk = 32;  // the prefill chunk (LanguageModel::kMaxChunk)

// A figure measured on a real card for the same model file and workload (docs/rdna3.md).
struct Anchor {
  const char* phase;  // "decode" or "prompt"
  double tokens_per_s;
  const char* who;  // engine, card, conditions, source
};

// A shape to model and its anchors.
struct ModelShape {
  std::string name;
  DemoModelOptions unit;  // one unit of layers
  uint32_t units;         // in the real model
  uint32_t vocab;         // the real output head's rows
  std::string preset;     // the published file's llama-quantize preset (its type mixture)
  int decode_sample, prefill_sample;  // MOCKGPU_SAMPLE per phase
  int64_t prompt;                     // the anchors' prompt (0: none longer than a chunk)
  std::vector<Anchor> anchors;
};

// The sources of the anchors (docs/rdna3.md, "Published measurements").
constexpr const char* kReference =
    "the reference implementation, 7900-class card, hand-written kernels (its published table)";
constexpr const char* kReferenceGeneric = "the reference implementation, generic kernels";
constexpr const char* kLlamaCpp =
    "llama.cpp ROCm, RX 7900 XTX, llama-bench (github.com/ggml-org/llama.cpp/pull/26284; pp2048 "
    "for the prompt)";
constexpr const char* kRdna3Engine =
    "a Qwen-specific RDNA3 engine, RX 7900 XTX, its 4-bit format, Qwen3.5 (warpfront/hipfire "
    "docs/BENCHMARKS.md; its prompt lengths not stated)";

std::vector<ModelShape> shapes() {
  DemoModelOptions q06;
  q06.arch = ModelArch::kQwen3;
  q06.n_layers = 1;
  q06.dim = 1024;
  q06.n_heads = 16;
  q06.n_kv_heads = 8;
  q06.head_dim = 128;
  q06.ffn_dim = 3072;
  DemoModelOptions q8b = q06;
  q8b.dim = 4096;
  q8b.n_heads = 32;
  q8b.ffn_dim = 12288;
  q8b.tied_output = false;
  DemoModelOptions q27 = q8b;
  q27.arch = ModelArch::kQwen35;
  q27.n_layers = 4;  // three Gated DeltaNet layers, then full attention
  q27.full_attention_interval = 4;
  q27.dim = 5120;
  q27.n_heads = 24;
  q27.n_kv_heads = 4;
  q27.head_dim = 256;
  q27.n_rot = 64;
  q27.ffn_dim = 17408;
  q27.ssm_key_heads = 16;
  q27.ssm_value_heads = 48;
  q27.ssm_key_head_dim = 128;
  q27.ssm_value_head_dim = 128;
  DemoModelOptions q08 = q27;  // Qwen3.5-0.8B: the same layer pattern, small
  q08.dim = 1024;
  q08.n_heads = 8;
  q08.n_kv_heads = 2;
  q08.ffn_dim = 3584;
  q08.ssm_value_heads = 16;
  q08.tied_output = true;
  return {{"qwen3-0.6b Q8_0", q06, 28, 151936, "Q8_0", 4, 16, 0, {}},
          {"qwen3-8b Q4_K_M",
           q8b,
           36,
           151936,
           "Q4_K_M",
           16,
           8,
           512,
           {{"decode", 114.8, kReference},
            {"decode", 16.5, kReferenceGeneric},
            {"prompt", 536, kReference},
            {"prompt", 69, kReferenceGeneric},
            {"decode", 106, kLlamaCpp},
            {"prompt", 3190, kLlamaCpp}}},
          {"qwen3.5-0.8b Q4_K_M",
           q08,
           6,
           248320,
           "Q4_K_M",
           4,
           8,
           512,
           {{"decode", 391, kRdna3Engine}, {"prompt", 7383, kRdna3Engine}}},
          {"qwen3.6-27b IQ4_XS",
           q27,
           16,
           248320,
           "IQ4_XS",
           32,
           16,
           401,
           {{"decode", 45.5, kReference},
            {"prompt", 348.7, kReference},
            {"decode", 47, kRdna3Engine},
            {"prompt", 478, kRdna3Engine}}}};
}

// What the preset's rule reads of the real model.
PresetModel preset_model(const ModelShape& s) {
  return {s.units * s.unit.n_layers, s.unit.n_heads / s.unit.n_kv_heads, s.unit.tied_output};
}

// The matrices of unit u's layers that the preset's layer rules name (docs/quants.md#presets), by
// name and type: the value projection (attn_v; attn_qkv in a Gated DeltaNet layer), attn_output
// and ffn_down. Units whose types are equal cost the same.
std::vector<std::pair<std::string, GgmlType>> unit_types(const ModelShape& s, uint32_t u) {
  const QuantPreset& p = preset_named(s.preset);
  const bool hybrid = s.unit.arch == ModelArch::kQwen35;
  std::vector<std::pair<std::string, GgmlType>> types;
  for (uint32_t l = 0; l < s.unit.n_layers; ++l) {
    const uint32_t i = u * s.unit.n_layers + l;
    const bool recurrent = hybrid && (i + 1) % s.unit.full_attention_interval != 0;
    for (const char* role : recurrent
                                ? std::vector<const char*>{"attn_qkv", "ffn_down"}
                                : std::vector<const char*>{"attn_v", "attn_output", "ffn_down"}) {
      const std::string name = fmt::format("blk.{}.{}.weight", i, role);
      types.emplace_back(role, preset_type(p, name, s.unit.dim, preset_model(s)));
    }
  }
  return types;
}

// The real model's units grouped by their types: one unit standing for each group, and how many.
std::vector<std::pair<uint32_t, uint32_t>> unit_groups(const ModelShape& s) {
  std::map<std::vector<std::pair<std::string, GgmlType>>, std::pair<uint32_t, uint32_t>>
      groups;  // by the types: the first unit, the count
  for (uint32_t u = 0; u < s.units; ++u)
    ++groups.try_emplace(unit_types(s, u), u, 0).first->second.second;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [types, g] : groups) out.push_back(g);
  std::sort(out.begin(), out.end());
  return out;
}

// Every launch libmockhip.so recorded since the last clear, modeled; clearing also empties the
// modeled caches: each step starts cold (docs/rdna3.md, "Cost model").
struct Modeled {
  mockgpu::ModeledSum sum;
  std::vector<std::string> slowest;  // the costliest launches, described
};
Modeled modeled(const std::string& lib) {
  Modeled m;
  std::vector<std::pair<double, std::string>> each;
  for (const mockgpu::LaunchRecord& r : mockgpu::launch_records(lib)) {
    const mockgpu::ModeledTime t = mockgpu::model_launch(r.counters);
    m.sum.add(t, r.counters);
    each.emplace_back(t.seconds, mockgpu::describe_launch(r.kernel, r.counters, t));
  }
  std::sort(each.begin(), each.end(), std::greater<>());
  for (size_t i = 0; i < each.size() && i < 4; ++i) m.slowest.push_back(each[i].second);
  mockgpu::clear_launch_records(lib);
  return m;
}

// Sums and differences of whole steps (the costliest launches stay the left operand's).
Modeled operator-(Modeled a, const Modeled& b) {
  a.sum -= b.sum;
  return a;
}
Modeled operator+(Modeled a, const Modeled& b) {
  a.sum += b.sum;
  return a;
}
Modeled operator*(double k, Modeled a) {
  a.sum *= k;
  return a;
}

struct Step {
  Modeled prefill, decode;
  Modeled last_chunk;  // the prompt's last chunk (when the shape has a prompt)
};

// The prompt's last chunk: its start and length.
int64_t last_start(int64_t prompt) { return (prompt - 1) / kChunk * kChunk; }

// One prefill chunk, then one decode step after it, on a model of `units` copies of the unit of
// layers at `as_unit` in the real model; and the last chunk of the shape's prompt (its cost grows
// with the positions attention reads).
Step run_model(const ModelShape& s, uint32_t as_unit, uint32_t units, const std::string& lib) {
  DemoModelOptions o = s.unit;
  o.n_layers = s.unit.n_layers * units;
  o.distinct_rows = 4;
  // Every copy of the unit carries the types unit `as_unit` has in the real file.
  o.preset = s.preset;
  o.preset_blocks = s.units * s.unit.n_layers;
  for (uint32_t l = 0; l < o.n_layers; ++l)
    o.preset_layers.push_back(as_unit * s.unit.n_layers + l % s.unit.n_layers);
  bench::TempModel file("bench_amd_modeled", o);
  GgufFile gguf = GgufFile::open(file.path);
  std::unique_ptr<LanguageModel> model =
      load_model(gguf, std::max<int64_t>(2 * kChunk, s.prompt + 1), "AMD");
  std::vector<int32_t> tokens(kChunk + 1);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(7 + 3 * i);
  Step step;
  modeled(lib);  // the upload and cache zeroing before this are not part of a step
  setenv("MOCKGPU_SAMPLE", std::to_string(s.prefill_sample).c_str(), 1);
  model->forward(std::span(tokens).first(kChunk), 0).to_vector<float>();
  step.prefill = modeled(lib);
  setenv("MOCKGPU_SAMPLE", std::to_string(s.decode_sample).c_str(), 1);
  model->forward(std::span(tokens).subspan(kChunk, 1), kChunk).to_vector<float>();
  step.decode = modeled(lib);
  if (s.prompt > kChunk) {
    // Timings do not depend on values: the positions before it need not run.
    const int64_t start = last_start(s.prompt);
    setenv("MOCKGPU_SAMPLE", std::to_string(s.prefill_sample).c_str(), 1);
    model->forward(std::span(tokens).first(s.prompt - start), start).to_vector<float>();
    step.last_chunk = modeled(lib);
  }
  return step;
}

// The output head alone: one row times a (rows, dim) matrix of `type` (random bytes).
Modeled run_head(GgmlType type, uint32_t rows, uint32_t dim, int sample, const std::string& lib) {
  std::vector<uint8_t> bytes(row_bytes(type, dim) * rows);
  std::mt19937_64 rng(1);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, std::min<size_t>(8, bytes.size() - i));
  }
  GgufTensor t;
  t.name = "output.weight";
  t.dims = {dim, rows};
  t.type = type;
  t.nbytes = bytes.size();
  t.data = bytes;
  Linear head = load_linear(t, "AMD");
  Tensor x = Tensor::full({1, dim}, 0.5, dtypes::float32, "AMD").contiguous();
  x.realize();
  modeled(lib);
  setenv("MOCKGPU_SAMPLE", std::to_string(sample).c_str(), 1);
  head(x).contiguous().realize();
  return modeled(lib);
}

// The DRAM rate the model reads at its middle corner.
double dram_rate() {
  const mockgpu::Measurement& m = mockgpu::measurement("dram_bytes_per_s");
  return 0.5 * (m.lo + m.hi);
}

// Prints a workload's modeled speed (range, version, hash) and its terms, the anchors measured
// for it, and returns it as a JSON object.
nlohmann::json report(std::FILE* out, const ModelShape& s, const char* workload, const char* phase,
                      const Modeled& m, double tokens) {
  const mockgpu::ModeledSum& t = m.sum;
  const double mid = tokens / t.seconds, low = tokens / t.slow_s, high = tokens / t.fast_s;
  std::fprintf(out, "  %-40s %s tok/s MODELED, %s\n", workload,
               mockgpu::format_range(mid, low, high).c_str(), mockgpu::model_name().c_str());
  std::fprintf(out,
               "    %.3f ms/step: %.0f launches x %.2f us = %.3f ms; DRAM %.1f MB = %.3f ms at "
               "%.0f GB/s (%.0f%% of the step); cached %.1f MB; spills %.1f MB\n",
               t.seconds * 1e3, t.launches, t.overhead_s / std::max(1.0, t.launches) * 1e6,
               t.overhead_s * 1e3, t.dram_bytes * 1e-6, t.dram_bytes / dram_rate() * 1e3,
               dram_rate() / 1e9, 100.0 * t.dram_bytes / dram_rate() / t.seconds,
               t.cached_bytes * 1e-6, t.scratch_bytes * 1e-6);
  std::fprintf(out, "    launches by their bound: %s\n", t.describe_bounds().c_str());
  for (const Anchor& a : s.anchors)
    if (std::string_view(a.phase) == phase)
      std::fprintf(out, "    measured anchor: %.1f tok/s, %s\n", a.tokens_per_s, a.who);
  nlohmann::json terms;
  for (size_t i = 0; i < std::size(mockgpu::kModelTerms); ++i)
    terms[mockgpu::kModelTerms[i]] = t.bound_s[i] * 1e3;
  nlohmann::json anchors = nlohmann::json::array();
  for (const Anchor& a : s.anchors)
    if (std::string_view(a.phase) == phase)
      anchors.push_back({{"tok_s", a.tokens_per_s}, {"measured_by", a.who}});
  return {
      {"model", s.name},
      {"mixture", s.preset},
      {"workload", workload},
      {"tok_s", {{"low", low}, {"mid", mid}, {"high", high}}},
      {"ms_per_step",
       {{"low", t.fast_s * 1e3}, {"mid", t.seconds * 1e3}, {"high", t.slow_s * 1e3}}},
      {"launches", t.launches},
      {"launch_overhead_ms", t.overhead_s * 1e3},
      {"dram_bytes", t.dram_bytes},
      {"cached_bytes", t.cached_bytes},
      {"spill_bytes", t.scratch_bytes},
      {"ms_by_bound", terms},
      {"anchors", anchors},
      {"cost_model", {{"version", mockgpu::CardModel{}.version}, {"hash", mockgpu::model_hash()}}}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string lib = std::getenv("HIP_LIB") ? std::getenv("HIP_LIB") : UGRAD_MOCKHIP_LIB;
  setenv("HIP_LIB", lib.c_str(), 1);
  std::vector<std::string> wanted(argv + 1, argv + argc);
  const bool json = std::erase(wanted, "--json") > 0;
  std::FILE* out = json ? stderr : stdout;
  std::vector<nlohmann::json> all;
  std::fprintf(out, "Modeled AMD (RX 7900 XTX, %s, NOT measured), %s\n",
               mockgpu::model_name().c_str(),
               knob_int(Knob::LLM_KERNELS) ? "hand-written kernels where they apply"
                                           : "generic kernels (LLM_KERNELS=0)");
  for (const ModelShape& s : shapes()) {
    if (!wanted.empty() && std::find_if(wanted.begin(), wanted.end(), [&](const std::string& w) {
                             return s.name.find(w) != std::string::npos;
                           }) == wanted.end())
      continue;
    auto t0 = bench::clock_type::now();
    // Each group of units with the same types: one and two copies of a unit standing for it.
    const std::vector<std::pair<uint32_t, uint32_t>> groups = unit_groups(s);
    std::vector<std::pair<Step, Step>> runs;
    for (const auto& [as_unit, count] : groups)
      runs.emplace_back(run_model(s, as_unit, 1, lib), run_model(s, as_unit, 2, lib));
    const uint32_t dim = s.unit.dim;
    const QuantPreset& preset = preset_named(s.preset);
    const GgmlType head_type = preset_type(
        preset, s.unit.tied_output ? "token_embd.weight" : "output.weight", dim, preset_model(s));
    const Modeled small_head = run_head(head_type, 272, dim, 1, lib);
    const Modeled head = run_head(head_type, s.vocab, dim, s.decode_sample, lib);
    // The units of every group, the rest of the step (one model's less its units), the real head.
    auto whole = [&](Modeled Step::*phase) {
      Modeled sum;
      for (size_t g = 0; g < groups.size(); ++g) {
        const Modeled unit = runs[g].second.*phase - runs[g].first.*phase;
        sum = sum + double(groups[g].second) * unit;
        if (g == 0) sum = sum + (runs[g].first.*phase - unit);
      }
      return sum - small_head + head;
    };
    std::fprintf(out,
                 "%s: %u units of %u layers in %zu groups of types, vocab %u, head %s "
                 "(emulated in %.0f s)\n",
                 s.name.c_str(), s.units, s.unit.n_layers, groups.size(), s.vocab,
                 std::string(format_of(head_type).name).c_str(), bench::seconds(t0));
    for (const auto& [as_unit, count] : groups) {
      std::string types;
      for (const auto& [role, t] : unit_types(s, as_unit))
        types += fmt::format(" {} {}", role, format_of(t).name);
      std::fprintf(out, "  %u units like unit %u:%s\n", count, as_unit, types.c_str());
    }
    std::vector<nlohmann::json> objects;
    const std::string decode = fmt::format("decode at position {} (~tg128, depth 0)", kChunk);
    objects.push_back(report(out, s, decode.c_str(), "decode", whole(&Step::decode), 1));
    objects.push_back(
        report(out, s, "prefill chunk of 32 at position 0", "", whole(&Step::prefill), kChunk));
    if (s.prompt > kChunk) {
      // The prompt's chunks: the first and the last modeled, the ones between interpolated (the
      // attention layers' cost grows linearly with the positions); only the last makes logits.
      const int64_t chunks = last_start(s.prompt) / kChunk + 1;
      const Modeled first = whole(&Step::prefill), last = whole(&Step::last_chunk);
      const Modeled prompt = double(chunks) * 0.5 * (first + last) - double(chunks - 1) * head;
      const std::string name =
          fmt::format("prompt of {} tokens in {} chunks of 32", static_cast<long long>(s.prompt),
                      static_cast<long long>(chunks));
      objects.push_back(report(out, s, name.c_str(), "prompt", prompt, double(s.prompt)));
    }
    const Step& one = runs[0].first;
    for (const auto& [phase, m] : {std::pair{"decode", &one.decode}, {"prefill", &one.prefill}}) {
      std::fprintf(out, "  costliest launches of one unit's %s:\n", phase);
      for (const std::string& d : m->slowest) std::fprintf(out, "    %s\n", d.c_str());
    }
    if (json)
      for (const nlohmann::json& o : objects) std::printf("%s\n", o.dump().c_str());
    all.insert(all.end(), objects.begin(), objects.end());
  }
  // The like-for-like table: each workload's modeled range beside what was measured for it.
  std::fprintf(out, "\nLike for like (MODELED, %s; anchors measured by others):\n",
               mockgpu::model_name().c_str());
  for (const nlohmann::json& o : all) {
    const nlohmann::json& t = o["tok_s"];
    std::string anchors;
    for (const nlohmann::json& a : o["anchors"])
      anchors += fmt::format("{}{:.1f}", anchors.empty() ? "" : ", ", a["tok_s"].get<double>());
    std::fprintf(out, "  %-20s %-42s %24s tok/s   measured: %s\n",
                 o["model"].get<std::string>().c_str(), o["workload"].get<std::string>().c_str(),
                 mockgpu::format_range(t["mid"], t["low"], t["high"]).c_str(),
                 anchors.empty() ? "-" : anchors.c_str());
  }
  return 0;
}
