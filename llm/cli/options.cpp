#include "llm/cli/options.h"

#include <algorithm>
#include <charconv>

#include "base/error.h"
#include "base/quote.h"

namespace ugrad::llm {
namespace {

template <typename T>
T number(const std::string& flag, const std::string& text) {
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    fail("{}: {} is not a valid number", flag, quote(text));
  return v;
}

std::vector<int32_t> id_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    ids.push_back(number<int32_t>("--prompt-ids", text.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

std::string cli_usage() {
  return R"(usage: llm --model PATH_OR_ALIAS [options]
       llm pull NAME [--json]     download a model into the Hugging Face cache
       llm list [--json]          the models in the cache (alias, file, size, format)
       llm rm NAME                remove a model from the cache
       llm serve --model NAME [--host H] [--port P] [--api-key KEY] [--max-queue N] [options]
                                  an OpenAI-compatible server with a chat page at /

Runs a GGUF Qwen model: Qwen3 (qwen3), Qwen3 MoE (qwen3moe), the Qwen3.5/3.6 Gated DeltaNet
hybrids (qwen35) and their MoE variants (qwen35moe). Without --prompt it starts an interactive chat.

  --model, -m NAME         a .gguf file, an alias (qwen3:0.6b ... qwen3:32b, qwen3:30b-a3b,
                           qwen3.5:0.8b, qwen3.5:27b, qwen3.6:27b) or ORG/NAME:FILE[@REVISION] on
                           the Hugging Face hub, downloaded on first use into its cache (HF_HOME;
                           HF_ENDPOINT, HF_TOKEN)
  --prompt, -p TEXT        one-shot prompt; the answer streams to stdout
  --prompt-ids 1,2,3       feed raw token ids instead of text (implies --raw)
  --raw                    no chat template: the prompt text is the model input as is
  --think                  let Qwen3 think (<think> block) in chat-formatted prompts
  --max-tokens N           tokens to generate (default 256)
  --max-context N          KV cache length in tokens (default 4096)
  --temperature T          0 = greedy (default 0); sampling runs on the device
  --top-k K  --top-p P  --min-p P  --seed S     (filters in this order; 0 / 1 / 0 = off)
  --device NAME            CPU (default DEV), NULL, NULL:gfx1100, AMD
  --mmap                   map the model file instead of reading it into memory (the CPU reads
                           it into huge pages: a freshly written file maps as 4 KiB pages, which
                           slows decoding; a GPU maps it always, it only uploads the weights)
  --benchmark              print prefill and decode tok/s and GB/s of weights read (on a NULL
                           device, which runs nothing: the kernels compiled and compile time)
  --json                   one JSON object on stdout (ids, text, timings)
  --top-logprobs K         with --json: the top K (id, logprob) pairs at every generated position
  --help, -h               this text

llm serve (also takes --max-context, --think, --device, --mmap; the sampling flags are per request):
  --host H                 address to listen on (default 127.0.0.1: this machine only)
  --port P                 port (default 8080; 0: any free port, printed on start)
  --api-key KEY            require `Authorization: Bearer KEY` on every /v1 route
  --max-queue N            requests that wait behind the running one (default 8); more get 429
)";
}

CliOptions parse_cli(const std::vector<std::string>& args, bool serve) {
  CliOptions o;
  o.serve = serve;
  // Flags of the other mode are refused, not ignored.
  static const std::vector<std::string> kServeOnly = {"--host", "--port", "--api-key",
                                                      "--max-queue"};
  static const std::vector<std::string> kRunOnly = {
      "--prompt",      "-p",      "--prompt-ids",  "--raw",   "--max-tokens",
      "--temperature", "--top-k", "--top-p",       "--min-p", "--seed",
      "--benchmark",   "--json",  "--top-logprobs"};
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) fail("{} needs a value", a);
      return args[++i];
    };
    const auto& wrong = serve ? kRunOnly : kServeOnly;
    if (std::find(wrong.begin(), wrong.end(), a) != wrong.end())
      fail("{} is an option of {} (see --help)", a, serve ? "llm, not llm serve" : "llm serve");
    if (a == "--help" || a == "-h")
      o.help = true;
    else if (a == "--model" || a == "-m")
      o.model = value();
    else if (a == "--prompt" || a == "-p")
      o.prompt = value();
    else if (a == "--prompt-ids")
      o.prompt_ids = id_list(value()), o.raw = true;
    else if (a == "--raw")
      o.raw = true;
    else if (a == "--mmap")
      o.mmap = true;
    else if (a == "--think")
      o.think = true;
    else if (a == "--max-tokens")
      o.max_tokens = number<int64_t>(a, value());
    else if (a == "--max-context")
      o.max_context = number<int64_t>(a, value());
    else if (a == "--temperature")
      o.sampling.temperature = number<float>(a, value());
    else if (a == "--top-k")
      o.sampling.top_k = number<int32_t>(a, value());
    else if (a == "--top-p")
      o.sampling.top_p = number<float>(a, value());
    else if (a == "--min-p")
      o.sampling.min_p = number<float>(a, value());
    else if (a == "--seed")
      o.sampling.seed = number<uint64_t>(a, value());
    else if (a == "--device")
      o.device = value();
    else if (a == "--benchmark")
      o.benchmark = true;
    else if (a == "--json")
      o.json = true;
    else if (a == "--top-logprobs")
      o.top_logprobs = number<int>(a, value());
    else if (a == "--host")
      o.host = value();
    else if (a == "--port")
      o.port = number<int>(a, value());
    else if (a == "--api-key")
      o.api_key = value(), o.api_key.empty() ? fail("--api-key must not be empty") : void();
    else if (a == "--max-queue")
      o.max_queue = number<int64_t>(a, value());
    else
      fail("unknown option {} (see --help)", quote(a));
  }
  if (o.help) return o;
  if (o.model.empty()) fail("--model is required (see --help)");
  if (o.max_tokens < 0) fail("--max-tokens {} is negative", o.max_tokens);
  if (o.max_context < 1) fail("--max-context {} must be at least 1", o.max_context);
  if (o.top_logprobs < 0) fail("--top-logprobs {} is negative", o.top_logprobs);
  if (o.top_logprobs > 0 && !o.json) fail("--top-logprobs needs --json");
  if (o.port < 0 || o.port > 65535) fail("--port {} is outside [0, 65535]", o.port);
  if (o.max_queue < 0) fail("--max-queue {} is negative", o.max_queue);
  if (o.json && !o.prompt && o.prompt_ids.empty()) fail("--json needs --prompt or --prompt-ids");
  Sampler::validate(o.sampling);
  return o;
}

}  // namespace ugrad::llm
