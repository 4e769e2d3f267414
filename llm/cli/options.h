// Command-line options of the `llm` command, parsed and validated.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llm/models/sampler.h"

namespace ugrad::llm {

struct CliOptions {
  std::string model;                  // path or alias
  std::optional<std::string> prompt;  // one shot; absent: interactive chat
  std::vector<int32_t> prompt_ids;    // --prompt-ids
  int64_t max_tokens = 256;
  int64_t max_context = 4096;
  SamplingOptions sampling;
  std::string device;  // "" = DEV
  bool benchmark = false;
  bool json = false;
  int top_logprobs = 0;
  bool raw = false;    // no chat template
  bool think = false;  // Qwen3 thinking mode in the chat template
  bool mmap = false;   // map the model file even on a device that runs it from host memory
  bool help = false;
  // llm serve
  bool serve = false;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;
  int64_t max_queue = 8;
};

/// Parses argv (without the program name; for `llm serve`, `serve` set and the words after it).
/// Errors name the flag and the bad value, or a flag the mode does not take.
CliOptions parse_cli(const std::vector<std::string>& args, bool serve = false);
/// The --help text.
std::string cli_usage();

}  // namespace ugrad::llm
