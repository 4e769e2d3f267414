// The demo trainer on a small fortune directory written here and the synthetic byte-level
// vocabulary: the corpus frames each fortune as `llm` frames a chat answer; the loss over the
// compact vocabulary is the cross-entropy over the full one; a resumed checkpoint continues
// exactly; the written GGUF, run by llm's own Qwen3 (a second implementation), gives the trained
// model's logits for every token id.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/error.h"
#include "llm/config/demo_model.h"
#include "llm/models/model.h"
#include "llm/tokenizer/chat_template.h"
#include "llm/train/trainer.h"

using namespace ugrad;
using namespace ugrad::llm;

namespace {

namespace fs = std::filesystem;

// Every source file, each with a few short fortunes (lowercase words: the synthetic vocabulary
// is byte-level, so some bytes never occur and stay unseen).
fs::path fortune_dir() {
  const fs::path dir = fs::temp_directory_path() / "ugrad_test_fortunes";
  fs::create_directories(dir);
  const std::vector<std::string> words = {"a cat", "the sun", "good luck", "a long day",
                                          "work",  "be kind", "no soup",   "tea time"};
  size_t k = 0;
  for (const FortuneSource& s : fortune_sources()) {
    std::ofstream out(dir / std::string(s.file));
    for (int i = 0; i < 4; ++i, ++k)
      out << words[k % words.size()] << " and " << words[(k * 3 + 1) % words.size()] << ".\n%\n";
  }
  return dir;
}

const FortuneCorpus& corpus() {
  static const BpeTokenizer tokenizer(synthetic_vocab());
  static const FortuneCorpus c =
      build_fortune_corpus(tokenizer, {.dir = fortune_dir().string(), .held_out_every = 4});
  return c;
}

TrainConfig tiny_config(int64_t steps) {
  return {
      .shape =
          {.n_layers = 1, .dim = 32, .n_heads = 2, .n_kv_heads = 1, .head_dim = 16, .ffn_dim = 64},
      .batch = 2,
      .seq = 96,  // the byte-level prompt alone is ~50 tokens
      .steps = steps,
      .warmup = 2};
}

}  // namespace

TEST_CASE("read_fortunes splits at % lines, trims, and drops empty entries") {
  const fs::path path = fs::temp_directory_path() / "ugrad_test_fortune_file";
  std::ofstream(path) << "  first one\nsecond line \n%\n%\n\n%\nlast\n";
  CHECK(read_fortunes(path.string()) == std::vector<std::string>{"first one\nsecond line", "last"});
  std::ofstream(path) << "%\n \n%\n";
  CHECK_THROWS_WITH_AS(read_fortunes(path.string()), doctest::Contains("holds no fortunes"), Error);
  CHECK_THROWS_WITH_AS(read_fortunes("/nonexistent/fortunes"),
                       doctest::Contains("fortunes` package"), Error);
}

TEST_CASE("the fortune corpus frames each fortune as the answer of a one-turn chat") {
  const BpeTokenizer tokenizer(synthetic_vocab());
  const FortuneCorpus& c = corpus();
  const size_t n = 4 * fortune_sources().size();
  CHECK(c.held_out.size() == n / 4);
  CHECK(c.n_train_samples == n - n / 4);
  // The first held-out sample is fortune 3 of the first file.
  const std::vector<std::string> first =
      read_fortunes((fs::path(fortune_dir()) / std::string(fortune_sources()[0].file)).string());
  const ChatSample& s = c.held_out[0];
  const ChatMessage request{"user", std::string(fortune_sources()[0].request)};
  const std::span<const TokenId> ids(s.ids);
  CHECK(tokenizer.decode(ids.first(s.answer_begin)) ==
        format_chat(ChatTemplate::kQwen3, std::span(&request, 1), {.enable_thinking = false}));
  CHECK(tokenizer.decode(ids.subspan(s.answer_begin, s.answer_end - s.answer_begin)) ==
        first[3] + "<|im_end|>");
  CHECK(tokenizer.decode(ids.subspan(s.answer_end)) == "\n");

  // The compact vocabulary is exactly the training stream's tokens, ascending.
  std::map<TokenId, size_t> counts;
  for (TokenId t : c.train) ++counts[t];
  REQUIRE(c.vocab.size() == counts.size());
  size_t i = 0;
  for (const auto& [token, count] : counts) {
    CHECK(c.vocab[i] == token);
    CHECK(c.compact(token) == static_cast<int32_t>(i));
    ++i;
  }
  CHECK(c.n_vocab == tokenizer.n_vocab());
  CHECK(c.unseen() > 0);
  const TokenId never = *tokenizer.token_id("[");  // no fortune here has a bracket
  CHECK(c.compact(never) == static_cast<int32_t>(c.vocab.size()));
  CHECK(c.unigram_entropy > 1.0);
  CHECK(c.unigram_entropy < std::log(static_cast<double>(c.vocab.size())));

  CHECK_THROWS_WITH_AS(build_fortune_corpus(tokenizer, {.dir = "/nonexistent"}),
                       doctest::Contains("/nonexistent/fortunes"), Error);
}

TEST_CASE("the loss over corpus tokens + unseen class + padding is the full vocabulary's") {
  // 5 corpus tokens, the unseen class for 7 more ids, 2 padding rows.
  TrainableQwen3 model({.n_layers = 1,
                        .dim = 32,
                        .n_heads = 2,
                        .n_kv_heads = 1,
                        .head_dim = 16,
                        .ffn_dim = 64,
                        .vocab = 8,
                        .classes = 6,
                        .unseen = 7},
                       3);
  const Tensor tokens = Tensor::from_vector<int32_t>({0, 3, 2, 4, 1, 0}, {1, 6});
  const std::vector<int32_t> target_ids = {3, 5, 0, 5, 2, 4};
  const Tensor targets = Tensor::from_vector(target_ids, {1, 6});
  const std::vector<float> logits = model.forward(tokens).to_vector<float>();
  const std::vector<float> nll =
      model.token_losses(model.log_probs(tokens), targets).to_vector<float>();
  for (size_t p = 0; p < 6; ++p) {
    // The full vocabulary: 5 tokens with their own rows, 7 sharing the class row's raw logit.
    const double shared = logits[p * 8 + 5] - std::log(7.0);
    double z = 7 * std::exp(shared);
    for (int c = 0; c < 5; ++c) z += std::exp(static_cast<double>(logits[p * 8 + c]));
    const int t = target_ids[p];
    const double expected = std::log(z) - (t == 5 ? shared : logits[p * 8 + t]);
    CHECK(nll[p] == doctest::Approx(expected).epsilon(1e-5));
  }
}

TEST_CASE("a resumed checkpoint continues exactly as the uninterrupted run") {
  const fs::path ck = fs::temp_directory_path() / "ugrad_test_checkpoint.gguf";
  Trainer whole(corpus(), tiny_config(4));
  whole.train();
  Trainer first(corpus(), tiny_config(4));
  first.step();
  first.step();
  first.save_checkpoint(ck.string());
  Trainer resumed(corpus(), tiny_config(4));
  resumed.load_checkpoint(ck.string());
  CHECK(resumed.steps_done() == 2);
  resumed.train();
  CHECK(resumed.steps_done() == 4);
  for (size_t i = 0; i < whole.model().params().size(); ++i)
    CHECK(resumed.model().params()[i].to_vector<float>() ==
          whole.model().params()[i].to_vector<float>());
  CHECK(resumed.held_out().loss == whole.held_out().loss);

  TrainConfig other = tiny_config(4);
  other.seed = 9;
  Trainer mismatch(corpus(), other);
  CHECK_THROWS_WITH_AS(mismatch.load_checkpoint(ck.string()),
                       doctest::Contains("written for another run"), Error);
}

TEST_CASE("the written GGUF, run by llm's Qwen3, gives the trained model's logits") {
  Trainer trainer(corpus(), tiny_config(3));
  trainer.train();
  const fs::path path = fs::temp_directory_path() / "ugrad_test_trained.gguf";
  trainer.write_gguf(path.string(), GgmlType::F32, synthetic_vocab(), "a test");
  const GgufFile file = GgufFile::open(path.string());
  CHECK(file.get_string("general.description") == "a test");
  std::unique_ptr<LanguageModel> model = load_model(file, 96, "CPU");

  const std::vector<int32_t> prompt(corpus().train.begin(), corpus().train.begin() + 7);
  const std::vector<float> full = model->forward(prompt, 0).to_vector<float>();
  std::vector<int32_t> compact;
  for (int32_t t : prompt) compact.push_back(corpus().compact(t));
  const TrainShape& s = trainer.model().shape();
  const std::vector<float> logits =
      trainer.model().forward(Tensor::from_vector(compact, {1, 7})).to_vector<float>();
  const float* last = &logits[6 * s.vocab];
  REQUIRE(full.size() == corpus().n_vocab);
  const double ln_unseen = std::log(static_cast<double>(s.unseen));
  double worst = 0;
  for (size_t t = 0; t < full.size(); ++t) {
    const int32_t c = corpus().compact(static_cast<int32_t>(t));
    const double expected = c == s.classes - 1 ? last[c] - ln_unseen : last[c];
    worst = std::max(worst, std::abs(full[t] - expected));
  }
  CHECK(worst < 1e-3);

  // Q8_0 and F16 files load too.
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::F16}) {
    trainer.write_gguf(path.string(), type, synthetic_vocab(), "a test");
    const GgufFile q = GgufFile::open(path.string());
    CHECK(q.tensor("output.weight").type == type);
    CHECK(load_model(q, 96, "CPU")->config().vocab_size == corpus().n_vocab);
  }
}
