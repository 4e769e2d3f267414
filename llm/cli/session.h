// A model ready to run for the `llm` command: the file read, the tokenizer, the model and its
// generator, warmed up so that the first request only replays captured graphs.
#pragma once
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "llm/cli/options.h"
#include "llm/gguf/gguf.h"
#include "llm/models/generate.h"
#include "llm/tokenizer/bpe.h"
#include "llm/tokenizer/chat_template.h"
#include "runtime/device.h"

namespace ugrad::llm {

/// The device the model runs on (the DEV knob unless --device).
const Device& cli_device(const CliOptions& o);

struct Session {
  GgufFile file;

 private:
  std::future<BpeTokenizer> building_tokenizer_;  // built on a thread beside the model's load

 public:
  std::unique_ptr<LanguageModel> model;
  Generator generator;
  double load_seconds;  // the file and the model
  double warmup_seconds;
  BpeTokenizer tokenizer;

  /// Loads the file at `path` (t0: when the process started, for load_seconds) and warms up,
  /// building the tokenizer meanwhile on another thread. On a terminal, unless `quiet`, a status
  /// line on stderr shows the bytes read and the kernels compiled.
  Session(const std::string& path, const CliOptions& o, std::chrono::steady_clock::time_point t0,
          bool quiet);

  /// The chat template that goes with the vocabulary.
  ChatTemplate chat_template() const;
  /// The prompt's tokens: the chat template around the conversation (`history`, when given,
  /// gets the new user turn) unless --raw.
  std::vector<int32_t> encode_prompt(const std::string& text, const CliOptions& o,
                                     std::vector<ChatMessage>* history);
  /// Generation options from the command line.
  GenerateOptions gen_options(const CliOptions& o) const;
};

}  // namespace ugrad::llm
