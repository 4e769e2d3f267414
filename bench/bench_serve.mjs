// Benchmark of `llm serve` as its clients see it: time to first token and tokens per second of
// streamed chat completions, for one client and for several concurrent ones.
//
//   node bench/bench_serve.mjs LLM_BINARY MODEL.gguf [--tokens N] [--clients N] [--rounds N]
//                              [-- SERVER_ARGS...]
//
// e.g. node bench/bench_serve.mjs build/llm/cli/llm /tmp/serve_demo.gguf -- --device cpu
//
// Node 20+ only (plain fetch, no npm packages). It starts the server on a free port, warms it with
// one request, then runs `--rounds` rounds (default 3) of each scenario: a single streaming chat
// request, then `--clients` (default 4) sent together. Every request is greedy (temperature 0),
// has thinking off, `ignore_eos` and `max_tokens` N (default 64), so each one generates exactly N
// tokens, and starts with its own text so that no request reuses another's cached prompt.
//   TTFT      ms from sending a request to its first content delta (for concurrent clients it
//             includes the wait in the queue: the server runs one generation at a time)
//   tok/s     aggregate: all the tokens generated in the scenario / its wall time
//   decode    the server's own timings.predicted_per_second (mean over the requests)
// It prints a table, then one JSON line with the medians over the rounds.
import {
  binaryAndModel, collectStream, modelId, postJson, startServer,
} from "../test/llm/server/serve_util.mjs";

const usage = "node bench/bench_serve.mjs LLM_BINARY MODEL.gguf [--tokens N] [--clients N] " +
              "[--rounds N] [-- SERVER_ARGS...]";
const { binary, model } = binaryAndModel(process.argv, usage);
const rest = process.argv.slice(4);
const dashes = rest.indexOf("--");
const serverArgs = dashes >= 0 ? rest.slice(dashes + 1) : [];
const options = { tokens: 64, clients: 4, rounds: 3 };
const flags = dashes >= 0 ? rest.slice(0, dashes) : rest;
for (let i = 0; i < flags.length; i += 2) {
  const key = flags[i].replace(/^--/, "");
  const value = Number(flags[i + 1]);
  if (!(key in options) || !Number.isInteger(value) || value < 1) {
    console.error(`bad option ${flags[i]} ${flags[i + 1] ?? ""}\nusage: ${usage}`);
    process.exit(2);
  }
  options[key] = value;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let serial = 0;  // makes every prompt different

// One streamed chat request: {ttftMs, tokens, seconds, decode}.
async function request(url, name, tokens) {
  const t0 = performance.now();
  const res = await postJson(`${url}/v1/chat/completions`, {
    model: name,
    messages: [{ role: "user", content: `Request ${++serial}: describe a lighthouse.` }],
    max_tokens: tokens, temperature: 0, ignore_eos: true, stream: true,
    stream_options: { include_usage: true }, chat_template_kwargs: { enable_thinking: false },
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const got = await collectStream(res, { t0 });
  const seconds = (performance.now() - t0) / 1000;
  if (!got.usage || got.usage.completion_tokens !== tokens)
    throw new Error(`expected ${tokens} tokens, got ${JSON.stringify(got.usage)}`);
  return { ttftMs: got.firstTextMs ?? seconds * 1000, tokens: got.usage.completion_tokens,
           seconds, decode: got.timings?.predicted_per_second ?? NaN };
}

// `clients` requests sent together: aggregate tok/s and the TTFT spread.
async function scenario(url, name, clients, tokens) {
  const t0 = performance.now();
  const results = await Promise.all(Array.from({ length: clients },
                                               () => request(url, name, tokens)));
  const wall = (performance.now() - t0) / 1000;
  const ttft = results.map((r) => r.ttftMs);
  const total = results.reduce((n, r) => n + r.tokens, 0);
  return {
    clients, wall_s: wall, tokens: total, tok_per_s: total / wall,
    ttft_ms: { min: Math.min(...ttft), median: median(ttft), max: Math.max(...ttft) },
    decode_tok_per_s: results.reduce((n, r) => n + r.decode, 0) / results.length,
  };
}

const server = await startServer(binary, model,
                                 ["--max-queue", String(Math.max(8, options.clients)),
                                  ...serverArgs]);
try {
  const name = modelId(model);
  await request(server.url, name, Math.min(8, options.tokens));  // warm-up
  const rows = [];
  for (const clients of [1, options.clients]) {
    const rounds = [];
    for (let r = 0; r < options.rounds; ++r)
      rounds.push(await scenario(server.url, name, clients, options.tokens));
    const pick = (f) => median(rounds.map(f));
    rows.push({
      clients, rounds: rounds.length, tokens_per_request: options.tokens,
      tok_per_s: pick((s) => s.tok_per_s), decode_tok_per_s: pick((s) => s.decode_tok_per_s),
      ttft_ms: { min: pick((s) => s.ttft_ms.min), median: pick((s) => s.ttft_ms.median),
                 max: pick((s) => s.ttft_ms.max) },
      wall_s: pick((s) => s.wall_s),
    });
  }

  const f = (x, d = 1) => x.toFixed(d).padStart(9);
  console.log(`llm serve ${name}: ${options.tokens} tokens per request, greedy, median of ` +
              `${options.rounds} rounds (ready in ${server.startSeconds.toFixed(2)} s: load ` +
              `${server.loadSeconds} s, warm-up ${server.warmupSeconds} s)`);
  console.log("clients      wall s     tok/s  decode/s  TTFT min    median       max (ms)");
  for (const r of rows)
    console.log(`${String(r.clients).padStart(7)} ${f(r.wall_s, 2)} ${f(r.tok_per_s)} ` +
                `${f(r.decode_tok_per_s)} ${f(r.ttft_ms.min)} ${f(r.ttft_ms.median)} ` +
                `${f(r.ttft_ms.max)}`);
  const round = (_, v) => (typeof v === "number" ? Number(v.toFixed(3)) : v);
  console.log(JSON.stringify({ bench: "serve", model: name, server_args: serverArgs,
                               ready_s: server.startSeconds, load_s: server.loadSeconds,
                               warmup_s: server.warmupSeconds, results: rows }, round));
} finally {
  const { code, log } = await server.stop();
  if (code !== 0) {
    console.error(`llm serve exited with ${code}:\n${log}`);
    process.exitCode = 1;
  }
}
