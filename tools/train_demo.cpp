// train_demo: trains the README's demo model with ugrad's own gradients (llm/train/trainer.h) on
// the fortune cookie databases of Debian's `fortunes` package, then writes it as a Qwen3 GGUF that
// `llm` chats with.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/status_line.h"
#include "llm/config/config.h"
#include "llm/config/demo_model.h"
#include "llm/tokenizer/bpe.h"
#include "llm/train/trainer.h"
#include "tools/args.h"

namespace {

using ugrad::fail;
using namespace ugrad::llm;
using namespace ugrad::tools;

constexpr std::string_view kUsage =
    R"(usage: train_demo -o OUT.gguf --vocab qwen3_vocab.txt [options]

Trains a small Qwen3-architecture model on Debian's fortune cookie databases (package
`fortunes`) with ugrad's own gradients, and writes it as a GGUF that `llm` loads. Each fortune
is the answer of a one-turn chat ("Tell me my fortune.", "Say something wise.", "Make me laugh.",
"Tell me about love.", ...); every 20th is held out to measure the trained model.

  -o, --output PATH       GGUF to write (required)
  --vocab PATH            Qwen3 vocabulary from scripts/tokenizer_reference.sh (required)
  --type NAME             F32, F16 or Q8_0 (default Q8_0)
  --fortunes DIR          the fortune files (default /usr/share/games/fortunes)
  --max-fortunes N        train on N fortunes spread over all files (default: all)
  --steps N               optimizer steps (default 600: 8 to 10 minutes on 2 cores)
  --batch N  --seq N      windows per step and their length in tokens (default 8 x 128)
  --lr X                  peak learning rate (default 3e-3; warm-up, then cosine to a tenth)
  --layers N --dim N --heads N --kv-heads N --head-dim N --ffn N
                          model shape (default 4, 256, 4, 2, 64, 768)
  --seed N                weights and batches (default 1)
  --checkpoint PATH       saved every --checkpoint-every steps (default 100); resumed from
                          when it exists
  -h, --help              this text
)";

struct Options {
  std::string output, vocab, checkpoint;
  GgmlType type = GgmlType::Q8_0;
  FortuneCorpusOptions corpus;
  TrainConfig train;
  int64_t checkpoint_every = 100;
};

Options parse(int argc, char** argv) {
  Options o;
  o.train.steps = 600;
  TrainShape& s = o.train.shape;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      fmt::print("{}", kUsage);
      std::exit(0);
    }
    if (i + 1 >= argc) fail("{}: missing value (see --help)", flag);
    const std::string_view v = argv[++i];
    const auto count = [&] { return static_cast<int64_t>(parse_u32(flag, v)); };
    if (flag == "-o" || flag == "--output")
      o.output = v;
    else if (flag == "--vocab")
      o.vocab = v;
    else if (flag == "--type")
      o.type = parse_ggml_type(flag, v);
    else if (flag == "--fortunes")
      o.corpus.dir = v;
    else if (flag == "--max-fortunes")
      o.corpus.max_fortunes = parse_u32(flag, v);
    else if (flag == "--steps")
      o.train.steps = count();
    else if (flag == "--batch")
      o.train.batch = count();
    else if (flag == "--seq")
      o.train.seq = count();
    else if (flag == "--lr") {
      o.train.lr = parse_double(flag, v);
      o.train.min_lr = o.train.lr / 10;
    } else if (flag == "--layers")
      s.n_layers = count();
    else if (flag == "--dim")
      s.dim = count();
    else if (flag == "--heads")
      s.n_heads = count();
    else if (flag == "--kv-heads")
      s.n_kv_heads = count();
    else if (flag == "--head-dim")
      s.head_dim = count();
    else if (flag == "--ffn")
      s.ffn_dim = count();
    else if (flag == "--seed")
      o.train.seed = parse_uint(flag, v);
    else if (flag == "--checkpoint")
      o.checkpoint = v;
    else if (flag == "--checkpoint-every")
      o.checkpoint_every = std::max<int64_t>(1, count());
    else
      fail("unknown option '{}' (see --help)", flag);
  }
  if (o.output.empty()) fail("no output file: pass -o OUT.gguf (see --help)");
  if (o.vocab.empty()) fail("no vocabulary: pass --vocab qwen3_vocab.txt (see --help)");
  if (o.type != GgmlType::F32 && o.type != GgmlType::F16 && o.type != GgmlType::Q8_0)
    fail("--type: {} is not one of F32, F16, Q8_0", format_of(o.type).name);
  return o;
}

std::string minutes(double seconds) {
  const int s = static_cast<int>(seconds + 0.5);
  return s >= 60 ? fmt::format("{}m{:02}s", s / 60, s % 60) : fmt::format("{}s", s);
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const VocabData vocab = read_vocab_text(o.vocab);
  const BpeTokenizer tokenizer(vocab);
  const FortuneCorpus corpus = build_fortune_corpus(tokenizer, o.corpus);
  fmt::print(
      "corpus: {} fortunes for training ({} tokens, {} answer tokens, {} distinct tokens), {} "
      "held out; unigram entropy of the answers {:.3f} nats\n",
      corpus.n_train_samples, corpus.train.size(), corpus.train_answer_tokens, corpus.vocab.size(),
      corpus.held_out.size(), corpus.unigram_entropy);
  Trainer trainer(corpus, o.train);
  const TrainShape& s = trainer.config().shape;
  fmt::print(
      "model: qwen3, {} layers, dim {}, {}/{} heads of {}, ffn {}; head over {} corpus tokens "
      "+ 1 class for the other {}; {} steps of {} x {} tokens\n",
      s.n_layers, s.dim, s.n_heads, s.n_kv_heads, s.head_dim, s.ffn_dim, s.classes - 1, s.unseen,
      o.train.steps, o.train.batch, o.train.seq);
  if (!o.checkpoint.empty() && std::filesystem::exists(o.checkpoint)) {
    trainer.load_checkpoint(o.checkpoint);
    fmt::print("resumed from {} at step {}\n", o.checkpoint, trainer.steps_done());
  }
  std::fflush(stdout);

  ugrad::StatusLine line;
  double first_loss = -1, last_loss = 0, avg = 0;
  trainer.train([&](const TrainProgress& p) {
    if (first_loss < 0) first_loss = p.loss;
    last_loss = p.loss;
    avg = avg == 0 ? p.loss : 0.95 * avg + 0.05 * p.loss;
    const double tps = static_cast<double>(p.tokens) / p.seconds;
    const double eta = p.seconds / static_cast<double>(p.tokens) *
                       static_cast<double>((p.steps - p.step) * o.train.batch * o.train.seq);
    const int filled = static_cast<int>(30 * p.step / std::max<int64_t>(p.steps, 1));
    const std::string text =
        fmt::format("training [{}{}] step {}/{}  loss {:.3f}  {:.0f} tokens/s  ETA {}",
                    std::string(filled, '#'), std::string(30 - filled, '.'), p.step, p.steps, avg,
                    tps, minutes(eta));
    line.show(text, p.step == p.steps);
    if (!line.on() && (p.step % 100 == 0 || p.step == p.steps)) {
      fmt::print("{}\n", text);
      std::fflush(stdout);
    }
    if (!o.checkpoint.empty() && (p.step % o.checkpoint_every == 0 || p.step == p.steps))
      trainer.save_checkpoint(o.checkpoint);
  });
  if (line.on()) std::fputc('\n', stderr);
  const HeldOut held_out = trainer.held_out();
  if (first_loss >= 0)
    fmt::print("loss: first step {:.3f}, last step {:.3f}\n", first_loss, last_loss);
  fmt::print(
      "held-out answers: {:.3f} nats per token (unigram entropy {:.3f}); all tokens outside the "
      "corpus together: probability {:.2g}\n",
      held_out.loss, corpus.unigram_entropy, held_out.unseen_probability);
  const std::string description = fmt::format(
      "A tiny Qwen3-architecture model trained by ugrad's train_demo for {} steps on Debian's "
      "fortune cookie databases (package fortunes): it makes words and phrases, not sense. "
      "Held-out loss {:.3f} nats per answer token, unigram entropy {:.3f}.",
      trainer.steps_done(), held_out.loss, corpus.unigram_entropy);
  trainer.write_gguf(o.output, o.type, vocab, description);
  // Read the file back through the model loader's validation before calling it done.
  const GgufFile file = GgufFile::open(o.output);
  const ModelConfig c = ModelConfig::from_gguf(file);
  ModelWeights::from_gguf(file, c);
  fmt::print("wrote {} ({}, {})\n", o.output, format_of(o.type).name,
             file.get_string("general.name"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return ugrad::tools::run_tool("train_demo", run, argc, argv); }
