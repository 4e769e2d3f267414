// llm: run a GGUF Qwen3 model — one-shot prompt, interactive chat, JSON output or benchmark.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/error.h"
#include "llm/cli/hub_commands.h"
#include "llm/cli/model_path.h"
#include "llm/cli/options.h"
#include "llm/cli/serve_command.h"
#include "llm/cli/session.h"
#include "llm/models/generate.h"
#include "llm/tokenizer/stream_decoder.h"
#include "runtime/jit.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

// Bytes of weights one decode step reads (every matrix and norm once).
double weight_bytes(const GgufFile& file) {
  double b = 0;
  for (const GgufTensor& t : file.tensors())
    if (t.name != "token_embd.weight" || !file.find_tensor("output.weight"))
      b += static_cast<double>(t.nbytes);
  return b;
}

int run(const CliOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  Session s(resolve_model_path(o.model, progress_display(o.model, o.json)), o, t0, o.json);
  if (!o.prompt && o.prompt_ids.empty()) {
    // Interactive chat: the conversation so far is re-encoded each turn; the cache keeps the
    // prefix.
    std::vector<ChatMessage> history;
    std::string line;
    std::fprintf(stderr, "ugrad chat (%s); empty line or Ctrl-D to quit\n", o.model.c_str());
    while (std::fprintf(stderr, "> "), std::getline(std::cin, line) && !line.empty()) {
      std::vector<int32_t> ids = s.encode_prompt(line, o, &history);
      StreamDecoder dec(s.tokenizer, false);
      std::string answer;
      GenerateResult r = s.generator.generate(ids, s.gen_options(o), [&](int32_t t) {
        if (s.tokenizer.is_end_of_generation(t)) return true;
        std::string piece = dec.push(t);
        answer += piece;
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
        return true;
      });
      std::string tail = dec.flush();
      answer += tail;
      std::printf("%s\n", tail.c_str());
      history.push_back({"assistant", answer});
    }
    return 0;
  }

  std::vector<int32_t> ids =
      o.prompt_ids.empty() ? s.encode_prompt(*o.prompt, o, nullptr) : o.prompt_ids;
  for (int32_t id : ids)
    if (id < 0 || id >= static_cast<int32_t>(s.model->config().vocab_size))
      fail("--prompt-ids: token id {} is outside the vocabulary [0, {})", id,
           s.model->config().vocab_size);
  StreamDecoder dec(s.tokenizer, false);
  bool stream = !o.json;
  GenerateResult r = s.generator.generate(ids, s.gen_options(o), [&](int32_t t) {
    if (stream && !s.tokenizer.is_end_of_generation(t)) {
      std::fputs(dec.push(t).c_str(), stdout);
      std::fflush(stdout);
    }
    return true;
  });
  if (stream) std::printf("%s\n", dec.flush().c_str());
  double prefill_tps = static_cast<double>(ids.size() - r.reused_tokens) / r.prefill_seconds;
  double decode_steps = static_cast<double>(r.tokens.size() > 0 ? r.tokens.size() - 1 : 0);
  double decode_tps = decode_steps > 0 ? decode_steps / r.decode_seconds : 0;
  // Speeds measured on a device that runs nothing (NULL, NULL:gfx1100) mean nothing.
  const Device& device = cli_device(o);
  const bool timed = device.runs_kernels();
  if (o.json) {
    // Valid UTF-8 even when the tokens end inside a character (the streamed text's rules).
    std::string text = decode_text(s.tokenizer, r.tokens, false);
    // Numbers as JSON numbers, a speed a device that runs nothing cannot measure as null.
    using Json = nlohmann::ordered_json;
    const auto speed = [&](double tps) { return timed ? Json(tps) : Json(nullptr); };
    Json out = {{"prompt_ids", ids},
                {"generated_ids", r.tokens},
                {"text", text},
                {"timings",
                 {{"load_s", s.load_seconds},
                  {"warmup_s", s.warmup_seconds},
                  {"prefill_s", r.prefill_seconds},
                  {"decode_s", r.decode_seconds},
                  {"prefill_tok_s", speed(prefill_tps)},
                  {"decode_tok_s", speed(decode_tps)}}}};
    if (o.top_logprobs > 0) {
      Json positions = Json::array();
      for (const auto& pos : r.top_logprobs) {
        Json row = Json::array();
        for (auto [id, p] : pos) row.push_back({id, p});
        positions.push_back(std::move(row));
      }
      out["top_logprobs"] = std::move(positions);
    }
    // The text is valid UTF-8 already; a byte that were not would print as U+FFFD, not throw.
    std::printf("%s\n", out.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
  }
  if (o.benchmark && !timed) {
    const JitStats& jit = jit_stats();
    std::printf(
        "load %.2f s | warm-up %.2f s | compiled %lld kernels in %.2f s | prefill %zu tokens, "
        "decode %zu tokens: no speed, device %s runs no kernels\n",
        s.load_seconds, s.warmup_seconds, static_cast<long long>(jit.compiles), jit.compile_seconds,
        ids.size(), r.tokens.size(), device.name().c_str());
  } else if (o.benchmark) {
    double gb = weight_bytes(s.file) * 1e-9;
    std::printf(
        "load %.2f s | warm-up (compile) %.2f s | prefill %zu tokens: %.2f tok/s | decode %zu "
        "tokens: %.2f tok/s, %.2f GB/s "
        "of weights\n",
        s.load_seconds, s.warmup_seconds, ids.size(), prefill_tps, r.tokens.size(), decode_tps,
        decode_tps * gb);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1 && is_hub_command(argv[1]))
      return run_hub_command(argv[1], std::vector<std::string>(argv + 2, argv + argc));
    const bool serve = argc > 1 && std::string_view(argv[1]) == "serve";
    CliOptions o = parse_cli(std::vector<std::string>(argv + 1 + serve, argv + argc), serve);
    if (o.help) {
      std::fputs(cli_usage().c_str(), stdout);
      return 0;
    }
    return serve ? run_serve(o) : run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm: %s\n", e.what());
    return 1;
  }
}
