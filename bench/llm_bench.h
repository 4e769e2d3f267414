// What the model benchmarks share: a demo model of a given shape written to a temporary GGUF, and
// a timed generate() (warm-up first, so compiles are not timed) on a prompt with no prefix reuse.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_util.h"
#include "llm/config/demo_model.h"
#include "llm/models/generate.h"
#include "llm/quant/formats.h"

namespace ugrad::bench {

/// The model benchmarks' arguments: [weight type, Q8_0 by default] [layers] [prompt tokens] [decode
/// tokens].
struct LlmBenchArgs {
  std::string type_name = "Q8_0";
  llm::GgmlType type = llm::GgmlType::Q8_0;
  uint32_t layers;
  int64_t prompt_len, decode_len;
};
inline LlmBenchArgs parse_llm_bench_args(int argc, char** argv, uint32_t layers,
                                         int64_t prompt_len) {
  LlmBenchArgs a{"Q8_0", llm::GgmlType::Q8_0, layers, prompt_len, 32};
  if (argc > 1) {
    a.type_name = argv[1];
    auto formats = llm::all_formats();
    auto it = std::find_if(formats.begin(), formats.end(),
                           [&](const llm::QuantFormat& f) { return f.name == a.type_name; });
    if (it == formats.end()) {
      std::fprintf(stderr, "unknown weight type '%s' (Q8_0, Q4_K, ...)\n", argv[1]);
      std::exit(2);
    }
    a.type = it->type;
  }
  if (argc > 2) a.layers = static_cast<uint32_t>(std::stoi(argv[2]));
  if (argc > 3) a.prompt_len = std::stoi(argv[3]);
  if (argc > 4) a.decode_len = std::stoi(argv[4]);
  return a;
}

/// A demo model written to a temporary file, removed with this object.
struct TempModel {
  std::string path;
  TempModel(const std::string& name, const llm::DemoModelOptions& o)
      : path((std::filesystem::temp_directory_path() / (name + ".gguf")).string()) {
    auto t0 = clock_type::now();
    llm::write_demo_model(path, o);
    ::sync();  // written back now, not while the model runs
    std::fprintf(stderr, "wrote %s in %.1f s\n", path.c_str(), seconds(t0));  // progress
  }
  ~TempModel() { std::filesystem::remove(path); }
};

/// Bytes of every tensor of the file: what one decode step reads (the tied embedding table is
/// read as the output projection; the embedding rows themselves are a few KB).
inline double weight_bytes(const llm::GgufFile& file) {
  double b = 0;
  for (const llm::GgufTensor& t : file.tensors()) b += static_cast<double>(t.nbytes);
  return b;
}

struct GenerateRun {
  double warmup_seconds, prefill_tps, decode_tps;  // the best round's
  std::vector<double> prefill_rounds, decode_rounds;
  size_t decoded;
};

/// How many times timed_generate() runs the prompt: our tok/s is the best round's, as the
/// baselines it is compared with (read bandwidth, OpenBLAS) are the best of several rounds.
constexpr int kGenerateRounds = 3;

/// Warms the model's graphs up, then generates `decode_len` tokens after a `prompt_len` prompt,
/// kGenerateRounds times; every round's prompt differs from the last from its first token, so
/// nothing is reused from the cache.
inline GenerateRun timed_generate(llm::LanguageModel& model, int64_t prompt_len,
                                  int64_t decode_len) {
  llm::Generator gen(model);
  GenerateRun run{};
  run.warmup_seconds = gen.warm_up();
  llm::GenerateOptions g;
  g.max_tokens = decode_len;
  for (int round = 0; round < kGenerateRounds; ++round) {
    std::vector<int32_t> prompt(prompt_len);
    for (int64_t i = 0; i < prompt_len; ++i)
      prompt[i] = static_cast<int32_t>((i * 7919 + round * 101) % 150000);
    llm::GenerateResult r = gen.generate(prompt, g);
    run.prefill_rounds.push_back(static_cast<double>(prompt_len) / r.prefill_seconds);
    run.decode_rounds.push_back(static_cast<double>(r.tokens.size() - 1) / r.decode_seconds);
    run.decoded = r.tokens.size();
  }
  run.prefill_tps = *std::max_element(run.prefill_rounds.begin(), run.prefill_rounds.end());
  run.decode_tps = *std::max_element(run.decode_rounds.begin(), run.decode_rounds.end());
  return run;
}

/// "best of 3: 40.12 38.70 41.03" for a line of the report.
inline std::string rounds_text(const std::vector<double>& rounds) {
  std::string s = "best of " + std::to_string(rounds.size()) + ":";
  char buf[32];
  for (double r : rounds) {
    std::snprintf(buf, sizeof buf, " %.2f", r);
    s += buf;
  }
  return s;
}

/// The demo model `o` written to a temporary file (removed before returning; the opened file's
/// mapping stays valid), loaded on the CPU with room for the prompt and the decoded tokens, and
/// timed_generate() on it.
struct DemoRun {
  llm::GgufFile file;
  GenerateRun run;
};
inline DemoRun run_demo(const std::string& name, const llm::DemoModelOptions& o,
                        const LlmBenchArgs& a) {
  TempModel tmp(name + "_" + a.type_name, o);
  // As `llm` opens it for the CPU: read into huge pages (mapped, the file just written would be
  // in 4 KiB pages, see mapped_file.h).
  llm::GgufFile file = llm::GgufFile::open(tmp.path, llm::FileMemory::Read);
  std::unique_ptr<llm::LanguageModel> model =
      llm::load_model(file, a.prompt_len + a.decode_len + 1, "CPU");
  const GenerateRun run = timed_generate(*model, a.prompt_len, a.decode_len);
  return {std::move(file), run};
}

}  // namespace ugrad::bench
