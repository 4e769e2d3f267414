#include "test/llm/tokenizer/reference_data.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace ugrad::llm::test {

namespace {

std::ifstream open_reference(const std::string& name) {
  const std::string path = reference_dir() + "/" + name;
  std::ifstream in(path);
  if (!in) {
    fail(
        "tokenizer reference data {} is missing: run scripts/tokenizer_reference.sh BUILD_DIR "
        "(CTest runs it as the tokenizer_reference fixture; needs node and npm)",
        path);
  }
  return in;
}

std::string from_hex(std::string_view hex) {
  if (hex.size() % 2) fail("tokenizer reference: odd-length hex '{}'", hex);
  const auto nibble = [&](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    fail("tokenizer reference: bad hex digit in '{}'", hex);
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  }
  return out;
}

// Reads "KEY VALUE" and checks the key.
std::string read_field(std::istream& in, std::string_view key) {
  std::string line;
  if (!std::getline(in, line)) fail("tokenizer reference: expected '{}', got end of file", key);
  if (line.rfind(std::string(key), 0) != 0 ||
      (line.size() > key.size() && line[key.size()] != ' ')) {
    fail("tokenizer reference: expected '{}', got '{}'", key, line.substr(0, 40));
  }
  return line.size() > key.size() ? line.substr(key.size() + 1) : std::string();
}

std::vector<TokenId> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::istringstream in(text);
  for (TokenId id; in >> id;) ids.push_back(id);
  return ids;
}

}  // namespace

std::string reference_dir() {
  if (const char* dir = std::getenv("UGRAD_TOKENIZER_REF_DIR"); dir && *dir) return dir;
  return UGRAD_TOKENIZER_REF_DIR;
}

VocabData load_qwen3_vocab() {
  std::ifstream in = open_reference("qwen3_vocab.txt");
  VocabData vocab;
  vocab.pre = read_field(in, "pre");
  vocab.bos_id = std::stoi(read_field(in, "bos"));
  vocab.eos_id = std::stoi(read_field(in, "eos"));
  vocab.eot_id = std::stoi(read_field(in, "eot"));
  vocab.pad_id = std::stoi(read_field(in, "pad"));
  const size_t n_tokens = std::stoul(read_field(in, "tokens"));
  vocab.tokens.reserve(n_tokens);
  vocab.token_types.reserve(n_tokens);
  std::string line;
  for (size_t i = 0; i < n_tokens; ++i) {
    if (!std::getline(in, line) || line.size() < 2)
      fail("tokenizer reference: token {} missing", i);
    vocab.token_types.push_back(std::stoi(line.substr(0, line.find(' '))));
    vocab.tokens.push_back(from_hex(std::string_view(line).substr(line.find(' ') + 1)));
  }
  const size_t n_merges = std::stoul(read_field(in, "merges"));
  vocab.merges.reserve(n_merges);
  for (size_t i = 0; i < n_merges; ++i) {
    if (!std::getline(in, line)) fail("tokenizer reference: merge {} missing", i);
    vocab.merges.push_back(from_hex(line));
  }
  return vocab;
}

const BpeTokenizer& qwen3_tokenizer() {
  static const BpeTokenizer tokenizer(load_qwen3_vocab());
  return tokenizer;
}

std::vector<ReferenceCase> load_qwen3_corpus_reference() {
  std::ifstream in = open_reference("qwen3_corpus_ref.txt");
  const size_t n = std::stoul(read_field(in, "cases"));
  std::vector<ReferenceCase> cases(n);
  for (ReferenceCase& c : cases) {
    c.text = from_hex(read_field(in, "case"));
    c.nfc = from_hex(read_field(in, "nfc"));
    c.nfkc = from_hex(read_field(in, "nfkc"));
    c.ids = parse_ids(read_field(in, "ids"));
    c.ids_nfc = parse_ids(read_field(in, "ids_nfc"));
  }
  return cases;
}

}  // namespace ugrad::llm::test
