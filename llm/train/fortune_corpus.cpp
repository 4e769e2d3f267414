#include "llm/train/fortune_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "llm/tokenizer/chat_template.h"

namespace ugrad::llm {

namespace {

constexpr std::string_view kFortune = "Tell me my fortune.";
constexpr std::string_view kWise = "Say something wise.";
constexpr std::string_view kFunny = "Make me laugh.";

constexpr std::array kSources = {
    FortuneSource{"fortunes", kFortune},
    FortuneSource{"cookie", kFortune},
    FortuneSource{"wisdom", kWise},
    FortuneSource{"platitudes", kWise},
    FortuneSource{"tao", kWise},
    FortuneSource{"paradoxum", kWise},
    FortuneSource{"humorists", kFunny},
    FortuneSource{"men-women", kFunny},
    FortuneSource{"miscellaneous", kFunny},
    FortuneSource{"riddles", kFunny},
    FortuneSource{"people", "Tell me about people."},
    FortuneSource{"work", "Tell me about work."},
    FortuneSource{"love", "Tell me about love."},
    FortuneSource{"literature", "Tell me about books."},
    FortuneSource{"education", "Tell me about school."},
    FortuneSource{"science", "Tell me about science."},
    FortuneSource{"food", "Tell me about food."},
    FortuneSource{"kids", "Tell me about children."},
    FortuneSource{"pets", "Tell me about pets."},
    FortuneSource{"sports", "Tell me about sports."},
    FortuneSource{"medicine", "Tell me about medicine."},
    FortuneSource{"law", "Tell me about the law."},
    FortuneSource{"politics", "Tell me about politics."},
    FortuneSource{"news", "Tell me the news."},
};

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const FortuneSource> fortune_sources() { return kSources; }

std::vector<std::string> read_fortunes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("fortunes: cannot read {} (Debian's `fortunes` package installs it)", path);
  std::vector<std::string> out;
  std::string entry, line;
  const auto flush = [&] {
    const std::string_view t = trim(entry);
    if (!t.empty()) out.emplace_back(t);
    entry.clear();
  };
  while (std::getline(in, line)) {
    if (line == "%" || line == "%\r") {
      flush();
    } else {
      entry += line;
      entry += '\n';
    }
  }
  flush();
  if (out.empty()) fail("fortunes: {} holds no fortunes", path);
  return out;
}

int32_t FortuneCorpus::compact(TokenId id) const {
  const auto it = index.find(id);
  return it == index.end() ? static_cast<int32_t>(vocab.size()) : it->second;
}

FortuneCorpus build_fortune_corpus(const BpeTokenizer& tokenizer,
                                   const FortuneCorpusOptions& options) {
  if (options.held_out_every < 2) fail("fortunes: held_out_every must be at least 2");
  struct Entry {
    std::string_view request;
    std::string text;
  };
  std::vector<Entry> entries;
  for (const FortuneSource& s : kSources)
    for (std::string& f : read_fortunes(options.dir + "/" + std::string(s.file)))
      entries.push_back({s.request, std::move(f)});
  if (options.max_fortunes != 0 && options.max_fortunes < entries.size()) {
    std::vector<Entry> kept;
    for (size_t i = 0; i < options.max_fortunes; ++i)
      kept.push_back(std::move(entries[i * entries.size() / options.max_fortunes]));
    entries = std::move(kept);
  }

  FortuneCorpus c;
  c.n_vocab = tokenizer.n_vocab();
  const std::vector<TokenId> end = tokenizer.encode("<|im_end|>\n");
  std::vector<size_t> answer_counts(c.n_vocab, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    const ChatMessage request{"user", std::string(entries[i].request)};
    ChatSample s;
    s.ids =
        tokenizer.encode(format_chat(ChatTemplate::kQwen3, std::span(&request, 1),
                                     {.add_generation_prompt = true, .enable_thinking = false}));
    s.answer_begin = s.ids.size();
    const std::vector<TokenId> answer = tokenizer.encode(entries[i].text, false);
    s.ids.insert(s.ids.end(), answer.begin(), answer.end());
    s.ids.insert(s.ids.end(), end.begin(), end.end());
    s.answer_end = s.ids.size() - (end.size() - 1);  // through <|im_end|>, not the newline
    if (i % options.held_out_every == options.held_out_every - 1) {
      c.held_out.push_back(std::move(s));
      continue;
    }
    for (size_t j = s.answer_begin; j < s.answer_end; ++j) ++answer_counts[s.ids[j]];
    c.train_answer_tokens += s.answer_end - s.answer_begin;
    c.train.insert(c.train.end(), s.ids.begin(), s.ids.end());
    ++c.n_train_samples;
  }
  if (c.held_out.empty() || c.n_train_samples == 0)
    fail("fortunes: {} fortunes are too few to hold some out", entries.size());

  std::vector<bool> seen(c.n_vocab, false);
  for (TokenId t : c.train) seen[t] = true;
  for (size_t t = 0; t < c.n_vocab; ++t)
    if (seen[t]) {
      c.index.emplace(static_cast<TokenId>(t), static_cast<int32_t>(c.vocab.size()));
      c.vocab.push_back(static_cast<TokenId>(t));
    }
  for (size_t n : answer_counts)
    if (n != 0) {
      const double p = static_cast<double>(n) / static_cast<double>(c.train_answer_tokens);
      c.unigram_entropy -= p * std::log(p);
    }
  return c;
}

}  // namespace ugrad::llm
