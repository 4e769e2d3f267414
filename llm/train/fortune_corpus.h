// The demo model's training text: the fortune cookie databases of Debian's `fortunes` package
// (BSD-licensed English quips, quotations and jokes in /usr/share/games/fortunes), each fortune
// written as the answer of a one-turn Qwen3 chat whose request depends on the file it comes from,
// tokenized with the real Qwen3 tokenizer exactly as `llm` frames a prompt (thinking off).
//
// The model trains over the token ids that occur in the training split only (the "compact"
// vocabulary); every other id of the tokenizer is one "unseen" class (see TrainShape::unseen).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "llm/tokenizer/bpe.h"

namespace ugrad::llm {

/// A fortune file and the user request its fortunes answer.
struct FortuneSource {
  std::string_view file;
  std::string_view request;
};

/// The files the demo trains on (English prose; no ASCII art, code or offensive files) and their
/// requests, in order.
std::span<const FortuneSource> fortune_sources();

/// Debian's fortune directory.
inline constexpr std::string_view kFortuneDir = "/usr/share/games/fortunes";

/// The fortunes of one file in strfile's text form (entries separated by lines holding only "%"),
/// trimmed, empty ones dropped. An Error names the path when it cannot be read or holds none.
std::vector<std::string> read_fortunes(const std::string& path);

/// One chat: prompt (the request, framed as `llm` frames it) then the answer (the fortune and
/// <|im_end|>) then "\n", as Qwen3's template separates turns.
struct ChatSample {
  std::vector<TokenId> ids;
  size_t answer_begin = 0;  // ids[answer_begin, answer_end) are the answer
  size_t answer_end = 0;
};

struct FortuneCorpusOptions {
  std::string dir = std::string(kFortuneDir);
  /// Every n-th fortune (of each file) is held out of training.
  size_t held_out_every = 20;
  /// 0: every fortune; n: n fortunes evenly spaced over all files (a smaller corpus for tests).
  size_t max_fortunes = 0;
};

struct FortuneCorpus {
  std::vector<TokenId> train;        // the training samples' ids, concatenated
  std::vector<ChatSample> held_out;  // whole samples
  size_t n_train_samples = 0;
  size_t train_answer_tokens = 0;
  /// Compact id -> token id: the ids occurring in `train`, ascending.
  std::vector<TokenId> vocab;
  /// Tokenizer's vocabulary size (the unseen class stands for n_vocab - vocab.size() ids).
  size_t n_vocab = 0;
  /// Entropy in nats of the unigram distribution of the training split's answer tokens.
  double unigram_entropy = 0;

  /// The compact id of a token; an unseen one maps to vocab.size() (the unseen class).
  int32_t compact(TokenId id) const;
  /// Token ids the unseen class stands for.
  int64_t unseen() const { return static_cast<int64_t>(n_vocab - vocab.size()); }

  std::unordered_map<TokenId, int32_t> index;  // token id -> compact id
};

/// Reads the files of fortune_sources() under options.dir and builds the corpus. An Error names a
/// missing file (install the `fortunes` package: scripts/setup.sh does).
FortuneCorpus build_fortune_corpus(const BpeTokenizer& tokenizer,
                                   const FortuneCorpusOptions& options = {});

}  // namespace ugrad::llm
