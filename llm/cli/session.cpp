#include "llm/cli/session.h"

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "base/env.h"
#include "base/status_line.h"
#include "llm/cli/hub_commands.h"
#include "llm/models/gguf_vocab.h"
#include "runtime/compile_observer.h"

namespace ugrad::llm {
namespace {

// A device that runs the model from host memory (the CPU) reads the file into huge pages unless
// --mmap; one that uploads the weights maps it (mapped_file.h).
FileMemory file_memory(const CliOptions& o) {
  if (o.mmap) return FileMemory::Mapped;
  return cli_device(o).reads_host_memory() ? FileMemory::Read : FileMemory::Mapped;
}

GgufFile open_with_progress(const std::string& path, const CliOptions& o, bool quiet) {
  StatusLine line(quiet);
  return GgufFile::open(path, file_memory(o), [&](const std::string& p, size_t done, size_t total) {
    line.show(fmt::format("loading {}: {} / {}", std::filesystem::path(p).filename().string(),
                          human_bytes(static_cast<double>(done)),
                          human_bytes(static_cast<double>(total))),
              done == total);
  });
}

double warm_up_with_progress(Generator& generator, const SamplingOptions& sampling, bool quiet) {
  StatusLine line(quiet);
  line.show("warm-up: compiling kernels", true);
  CompileObserver previous = set_compile_observer([&](const CompileEvent& e) {
    line.show(fmt::format("warm-up: {} kernels compiled in {:.1f} s (this graph: {} of {})",
                          e.compiled, e.seconds, e.kernel, e.kernels));
  });
  const double seconds = generator.warm_up(sampling);
  set_compile_observer(std::move(previous));
  return seconds;
}

}  // namespace

const Device& cli_device(const CliOptions& o) {
  return get_device(o.device.empty() ? knob_str(Knob::DEV) : o.device);
}

Session::Session(const std::string& path, const CliOptions& o,
                 std::chrono::steady_clock::time_point t0, bool quiet)
    : file(open_with_progress(path, o, quiet)),
      building_tokenizer_(
          std::async(std::launch::async, [this] { return BpeTokenizer(vocab_from_gguf(file)); })),
      model(load_model(file, o.max_context, o.device)),
      generator(*model),
      load_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()),
      warmup_seconds(warm_up_with_progress(generator, o.sampling, quiet)),
      tokenizer(building_tokenizer_.get()) {}

ChatTemplate Session::chat_template() const {
  return chat_template_for_pre(tokenizer.pre_tokenizer().name());
}

std::vector<int32_t> Session::encode_prompt(const std::string& text, const CliOptions& o,
                                            std::vector<ChatMessage>* history) {
  if (o.raw) return tokenizer.encode(text);
  std::vector<ChatMessage> turn = history ? *history : std::vector<ChatMessage>{};
  turn.push_back({"user", text});
  if (history) *history = turn;
  return tokenizer.encode(format_chat(chat_template(), turn, {true, o.think}), true);
}

GenerateOptions Session::gen_options(const CliOptions& o) const {
  GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.sampling = o.sampling;
  g.top_logprobs = o.top_logprobs;
  g.is_stop = [this](int32_t t) { return tokenizer.is_end_of_generation(t); };
  return g;
}

}  // namespace ugrad::llm
