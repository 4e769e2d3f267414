// Loads the Qwen3 reference data written by scripts/tokenizer_reference.sh (see
// make_reference.cjs for the format). Missing data is an error, never a skip.
#pragma once
#include <string>
#include <vector>

#include "llm/tokenizer/bpe.h"

namespace ugrad::llm::test {

/// The directory with qwen3_vocab.txt and qwen3_corpus_ref.txt (UGRAD_TOKENIZER_REF_DIR
/// environment variable, else the build tree's tokenizer_ref).
std::string reference_dir();

/// The Qwen3 vocabulary as llama.cpp's converter writes it into GGUF.
VocabData load_qwen3_vocab();

/// One shared tokenizer per test process (built once; about 0.2 s).
const BpeTokenizer& qwen3_tokenizer();

struct ReferenceCase {
  std::string text;              // corpus string
  std::string nfc;               // its NFC form (per node's String.prototype.normalize)
  std::string nfkc;              // its NFKC form (to count the compatibility cases NFC must keep)
  std::vector<TokenId> ids;      // JS tokenizer without its NFC normalizer (what llama.cpp does)
  std::vector<TokenId> ids_nfc;  // JS tokenizer as shipped (NFC normalizer on)
};

/// The corpus with the JS tokenizer's ids.
std::vector<ReferenceCase> load_qwen3_corpus_reference();

}  // namespace ugrad::llm::test
