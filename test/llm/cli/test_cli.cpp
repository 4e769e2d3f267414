// The `llm` command: options and their errors, alias lookup, and the binary itself on demo GGUFs
// (JSON output against the in-process generator, clear errors and non-zero exits on bad input).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "base/env.h"
#include "base/error.h"
#include "llm/cli/model_path.h"
#include "llm/cli/options.h"
#include "llm/config/demo_model.h"
#include "llm/models/generate.h"
#include "llm/models/gguf_vocab.h"
#include "llm/models/model.h"
#include "llm/tokenizer/stream_decoder.h"
#include "llm/tokenizer/utf8.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

struct RunResult {
  int status;
  std::string output;  // stdout and stderr
};

// Runs `llm args`; the output is stdout and stderr, or stdout alone without `with_stderr`.
RunResult run_llm(const std::string& args, bool with_stderr = true) {
  // HIP_LIB: the emulator, for --device AMD (the CPU never opens it).
  std::string cmd = "HIP_LIB=" + std::string(UGRAD_MOCKHIP_LIB) + " " +
                    std::string(UGRAD_LLM_BINARY) + " " + args +
                    (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int st = pclose(pipe);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("ugrad_test_cli_" + std::to_string(::getpid()) + "_" + name);
}

std::string write_demo(const std::string& name, ModelArch arch) {
  DemoModelOptions o;
  o.arch = arch;
  o.seed = 5;
  std::string path = temp_path(name).string();
  write_demo_model(path, o);
  return path;
}

// The integers of the JSON array after "key":.
std::vector<int32_t> json_ids(const std::string& json, const std::string& key) {
  std::smatch m;
  REQUIRE(std::regex_search(json, m, std::regex("\"" + key + "\":\\[([0-9,]*)\\]")));
  std::vector<int32_t> ids;
  std::string list = m[1];
  for (size_t p = 0; p < list.size();) {
    size_t q = list.find(',', p);
    if (q == std::string::npos) q = list.size();
    ids.push_back(std::stoi(list.substr(p, q - p)));
    p = q + 1;
  }
  return ids;
}

// What a strict client does with llm --json: nlohmann::json rejects anything outside RFC 8259,
// invalid UTF-8 in strings included.
bool strict_json_ok(const std::string& text) { return nlohmann::json::accept(text); }

// What llm writes to stdout, for output a program would parse.
std::string stdout_of_llm(const std::string& args) { return run_llm(args, false).output; }

}  // namespace

TEST_CASE("llm options: values, defaults and errors that name the flag") {
  CliOptions o = parse_cli({"-m", "x.gguf", "--prompt-ids", "1,2,3", "--temperature", "0.7",
                            "--top-k", "40", "--top-p", "0.9", "--min-p", "0.05", "--seed", "9",
                            "--max-tokens", "12", "--json", "--top-logprobs", "3"});
  CHECK(o.model == "x.gguf");
  CHECK(o.prompt_ids == std::vector<int32_t>{1, 2, 3});
  CHECK(o.raw);
  CHECK(o.sampling.top_k == 40);
  CHECK(o.sampling.seed == 9);
  CHECK(o.max_tokens == 12);
  CHECK(o.top_logprobs == 3);
  CHECK_FALSE(o.mmap);
  CHECK(parse_cli({"-m", "x.gguf", "--mmap"}).mmap);
  CHECK(parse_cli({"--help"}).help);
  auto fails = [](std::vector<std::string> args, const std::string& what) {
    CAPTURE(what);
    CHECK_THROWS_WITH_AS(parse_cli(args), doctest::Contains(what.c_str()), Error);
  };
  fails({"--prompt", "hi"}, "--model is required");
  fails({"-m", "x", "--max-tokens"}, "--max-tokens needs a value");
  fails({"-m", "x", "--max-tokens", "ten"}, "--max-tokens");
  fails({"-m", "x", "--max-context", "0"}, "--max-context 0");
  fails({"-m", "x", "--top-logprobs", "2"}, "--top-logprobs needs --json");
  fails({"-m", "x", "--json"}, "--json needs --prompt or --prompt-ids");
  fails({"-m", "x", "--top-p", "0"}, "top-p 0 is not in (0, 1]");
  fails({"-m", "x", "--temperature", "-1"}, "temperature");
  fails({"-m", "x", "--frobnicate"}, "--frobnicate");
}

TEST_CASE("llm model names: a path, an alias of the table, or ORG/NAME:FILE[@REVISION]") {
  const std::optional<HubFile> alias = hub_file_of("qwen3:0.6b");
  REQUIRE(alias);
  CHECK(alias->repo == "Qwen/Qwen3-0.6B-GGUF");
  CHECK(alias->file == "Qwen3-0.6B-Q8_0.gguf");
  CHECK(alias->revision == "main");
  const std::optional<HubFile> named = hub_file_of("org/repo:dir/model.gguf@v2");
  REQUIRE(named);
  CHECK(named->repo == "org/repo");
  CHECK(named->file == "dir/model.gguf");
  CHECK(named->revision == "v2");
  for (const char* bad : {"model.gguf", "qwen3:9b", "a/b/c:f.gguf", "org/repo:", "o/r:f@"})
    CHECK_FALSE(hub_file_of(bad));
  // Every alias names a .gguf file of an ORG/NAME repository; a pinned one a commit.
  for (const ModelAlias& a : model_aliases()) {
    CAPTURE(a.alias);
    CHECK(a.file.repo.find('/') != std::string::npos);
    CHECK(a.file.file.ends_with(".gguf"));
    CHECK(a.pinned == (a.file.revision.size() == 40));
  }
  CHECK_THROWS_WITH_AS(resolve_model_path("nope.gguf"),
                       doctest::Contains("neither a file nor an alias"), Error);
  // Not in the cache: downloaded, here from a hub that is not there.
  const std::filesystem::path cache = temp_path("hub");
  ScopedKnob dir(Knob::HF_HUB_CACHE, cache.string());
  ScopedKnob hub(Knob::HF_ENDPOINT, "http://127.0.0.1:9");
  CHECK_THROWS_WITH_AS(resolve_model_path("qwen3:0.6b"),
                       doctest::Contains("cannot reach http://127.0.0.1:9"), Error);
  std::filesystem::remove_all(cache);
}

TEST_CASE(
    "llm --json: the generated ids are the in-process generator's (file read or mapped), with top "
    "log-probs") {
  std::string path = write_demo("qwen3.gguf", ModelArch::kQwen3);
  RunResult r = run_llm("--model " + path +
                        " --prompt-ids 5,9,14,200,33 --max-tokens 6 --json --top-logprobs 3");
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  std::vector<int32_t> got = json_ids(r.output, "generated_ids");
  CHECK(json_ids(r.output, "prompt_ids") == std::vector<int32_t>{5, 9, 14, 200, 33});
  // The command reads the file into memory on the CPU; the generator here maps it, as --mmap does.
  RunResult mapped =
      run_llm("--model " + path + " --prompt-ids 5,9,14,200,33 --max-tokens 6 --json --mmap");
  REQUIRE(mapped.status == 0);
  CHECK(json_ids(mapped.output, "generated_ids") == got);
  GgufFile file = GgufFile::open(path);
  std::unique_ptr<LanguageModel> model = load_model(file, 4096, "CPU");
  Generator gen(*model);
  GenerateOptions g;
  g.max_tokens = 6;
  std::vector<int32_t> prompt{5, 9, 14, 200, 33};
  GenerateResult want = gen.generate(prompt, g);
  CHECK(got == std::vector<int32_t>(want.tokens.begin(), want.tokens.end()));
  // One row of 3 [id,logprob] pairs per generated token, ids first among them.
  std::regex pair_re("\\[(-?[0-9]+),(-?[0-9.e+-]+)\\]");
  size_t lp = r.output.find("\"top_logprobs\":");
  REQUIRE(lp != std::string::npos);
  std::string rows = r.output.substr(lp);
  auto pairs = std::distance(std::sregex_iterator(rows.begin(), rows.end(), pair_re),
                             std::sregex_iterator());
  CHECK(pairs == static_cast<long>(3 * got.size()));
  for (const char* key : {"load_s", "warmup_s", "prefill_tok_s", "decode_tok_s", "\"text\""})
    CHECK(r.output.find(key) != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("llm --json: valid UTF-8 JSON when the tokens end inside a character (issue #28)") {
  // The demo vocabulary is the 256 byte tokens (and a few merges): a random model emits bytes
  // that do not complete characters, as byte-level BPE splits characters across tokens.
  std::string path = write_demo("utf8.gguf", ModelArch::kQwen3);
  BpeTokenizer tok(vocab_from_gguf(GgufFile::open(path)));
  int broken = 0;
  for (int seed = 1; seed <= 8 && broken < 2; ++seed) {
    const std::string out = stdout_of_llm("--model " + path +
                                          " --prompt-ids 5,9,14,200,33 --max-tokens 5 --json "
                                          "--temperature 1 --seed " +
                                          std::to_string(seed));
    CAPTURE(out);
    REQUIRE(strict_json_ok(out));
    const std::string text = nlohmann::json::parse(out).at("text").get<std::string>();
    const std::vector<int32_t> ids = json_ids(out, "generated_ids");
    const std::string raw = tok.decode(ids, false);
    // The text is what the streaming decoder gives: held-back bytes, then U+FFFD for what never
    // completes.
    CHECK(text == decode_text(tok, ids, false));
    broken += utf8_invalid_offset(raw) != raw.size();
  }
  CHECK(broken >= 1);  // the raw bytes were not UTF-8 at least once: the case of the issue
  std::filesystem::remove(path);
}

TEST_CASE("llm runs the hybrid and MoE families, and --benchmark reports speeds") {
  for (ModelArch arch : {ModelArch::kQwen35, ModelArch::kQwen3Moe, ModelArch::kQwen35Moe}) {
    std::string path = write_demo("family.gguf", arch);
    RunResult r = run_llm("--model " + path + " --prompt hello --raw --max-tokens 3 --benchmark");
    CAPTURE(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("decode 3 tokens") != std::string::npos);
    std::filesystem::remove(path);
  }
}

// The AMD path without a GPU: every kernel of every family (model, sampler) is compiled for
// gfx1100 and its code object validated; NULL devices run nothing, so the tokens are meaningless.
TEST_CASE("llm --device NULL:gfx1100 compiles every family's kernels for RDNA3") {
  for (ModelArch arch :
       {ModelArch::kQwen3, ModelArch::kQwen35, ModelArch::kQwen3Moe, ModelArch::kQwen35Moe}) {
    std::string path = write_demo("gfx1100.gguf", arch);
    RunResult r = run_llm("--model " + path +
                          " --prompt hello --raw --max-tokens 2 --temperature 0.7 --top-k 5 "
                          "--top-p 0.9 --min-p 0.01 --device NULL:gfx1100");
    CAPTURE(arch_name(arch));
    CAPTURE(r.output);
    CHECK(r.status == 0);
    std::filesystem::remove(path);
  }
}

TEST_CASE("llm --benchmark, --json and DEBUG=2 on a NULL device claim no speed (issue #28)") {
  std::string path = write_demo("null_bench.gguf", ModelArch::kQwen3);
  const std::string args =
      "--model " + path + " --prompt hello --raw --max-tokens 2 --device NULL:gfx1100";
  RunResult bench = run_llm(args + " --benchmark");
  CAPTURE(bench.output);
  CHECK(bench.status == 0);
  CHECK(bench.output.find("tok/s") == std::string::npos);
  CHECK(bench.output.find("GB/s") == std::string::npos);
  std::smatch m;
  CHECK(std::regex_search(bench.output, m,
                          std::regex("compiled ([0-9]+) kernels in [0-9.]+ s \\| prefill [0-9]+ "
                                     "tokens, decode 2 tokens: no speed, device NULL:gfx1100 "
                                     "runs no kernels")));
  if (!m.empty()) CHECK(std::stoi(m[1]) > 0);
  const std::string json = stdout_of_llm(args + " --json");
  CAPTURE(json);
  CHECK(json.find("\"prefill_tok_s\":null,\"decode_tok_s\":null") != std::string::npos);
  CHECK(strict_json_ok(json));
  ::setenv("DEBUG", "2", 1);
  RunResult debug = run_llm(args);
  ::unsetenv("DEBUG");
  CHECK(debug.status == 0);
  // One line per kernel launch on NULL:gfx1100 and per JIT replay (of the model, on that device);
  // the few CPU kernels (host-side conversions at load) do run and keep their times.
  size_t null_lines = 0, replay_lines = 0;
  std::istringstream lines(debug.output);
  for (std::string line; std::getline(lines, line);) {
    const bool on_null = line.starts_with("NULL:gfx1100 "), replay = line.starts_with("replay ");
    if (!on_null && !replay) continue;
    CAPTURE(line);
    CHECK(line.find("compiled, not run (NULL:gfx1100 runs nothing: no time)") != std::string::npos);
    CHECK(line.find("GFLOP/s") == std::string::npos);
    CHECK(line.find("GB/s") == std::string::npos);
    CHECK(line.find(" ms ") == std::string::npos);
    null_lines += on_null, replay_lines += replay;
  }
  CHECK(null_lines > 0);
  CHECK(replay_lines > 0);
  std::filesystem::remove(path);
}

TEST_CASE("llm errors: non-zero exit and a message naming the problem") {
  std::string path = write_demo("err.gguf", ModelArch::kQwen3);
  auto fails = [](const std::string& args, const std::string& what) {
    RunResult r = run_llm(args);
    CAPTURE(args);
    CAPTURE(r.output);
    CHECK(r.status != 0);
    CHECK(r.output.find(what) != std::string::npos);
  };
  fails("--model " + path + " --prompt-ids 1,2,3,4,5,6 --max-context 4 --json",
        "the prompt has 6 tokens but the context holds 4");
  fails("--model " + path + " --prompt-ids 1,99999999 --json", "outside the vocabulary");
  fails("--model /nonexistent/m.gguf --prompt hi", "does not exist");
  fails("--model " + path + " --prompt hi --device NOPE", "NOPE");
  fails("--prompt hi", "--model is required");
  // A truncated file.
  std::string cut = temp_path("cut.gguf").string();
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  fails("--model " + cut + " --prompt hi", "llm: gguf: ");
  std::filesystem::remove(cut);
  // Issue #28: a flipped byte in the first key's length; the key's bytes come out escaped and the
  // message ends with what is wrong.
  std::string flipped = temp_path("flipped.gguf").string();
  {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes[24] == 20);  // strlen("general.architecture")
    bytes[24] ^= 0x02;
    std::ofstream(flipped, std::ios::binary) << bytes;
  }
  RunResult r = run_llm("--model " + flipped + " --prompt hi");
  CAPTURE(r.output);
  CHECK(r.status != 0);
  CHECK(r.output.ends_with(
      "metadata key 'general.architecture\\x08\\x00' has unknown value type 327680\n"));
  const std::string message = r.output.substr(0, r.output.size() - 1);
  CHECK(std::none_of(message.begin(), message.end(),
                     [](char c) { return static_cast<uint8_t>(c) < 0x20; }));
  std::filesystem::remove(flipped);
  std::filesystem::remove(path);
}

// The whole model as gfx1100 code, end to end through the command: the emulator behind the HIP
// loader (HIP_LIB), greedy and sampled (the sampler's uniforms are the same on every device).
TEST_SUITE("slow") {
  TEST_CASE("llm --device AMD on the gfx1100 emulator gives the CPU's tokens") {
    for (ModelArch arch : {ModelArch::kQwen3, ModelArch::kQwen35}) {
      std::string path = write_demo("amd.gguf", arch);
      for (const char* sampling : {"", " --temperature 0.8 --top-k 20 --seed 3"}) {
        const std::string args =
            "--model " + path + " --prompt-ids 5,9,14,200,33 --max-tokens 5 --json" + sampling;
        RunResult cpu = run_llm(args, false);
        RunResult amd = run_llm(args + " --device AMD", false);
        CAPTURE(arch_name(arch));
        CAPTURE(sampling);
        CAPTURE(amd.output);
        REQUIRE(cpu.status == 0);
        REQUIRE(amd.status == 0);
        CHECK(json_ids(amd.output, "generated_ids") == json_ids(cpu.output, "generated_ids"));
      }
      std::filesystem::remove(path);
    }
  }
}
