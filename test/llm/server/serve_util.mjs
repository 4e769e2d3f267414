// Helpers shared by the Node.js tests of `llm serve` (openai_client.mjs, chat_page.mjs) and by
// bench/bench_serve.mjs: start a server on a model and learn its port from the line it prints,
// stop it with a signal, post JSON, and read a server-sent event stream from a fetch response.
// Only Node's built-ins are used here, so the benchmark runs without the npm packages.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

// `llm serve: NAME on http://HOST:PORT (chat page at /, ...)`, printed on stderr once it listens.
const kReadyLine = /^llm serve: (\S+) on (http:\/\/[^:\s]+:(\d+))/m;

const running = new Set();  // servers this process started and has not stopped yet

// A test that throws or a script that exits early must not leave a server behind.
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** The model's id in the API: the file's base name. */
export function modelId(modelPath) {
  return path.basename(modelPath);
}

/**
 * Loads an npm package from the node_modules that scripts/server_test_deps.sh installed. ES
 * imports resolve next to the importing file (here: the source tree, which has no node_modules),
 * so the package is looked up from the working directory instead (BUILD_DIR/server_test, where
 * CTest runs these scripts), or from $SERVER_TEST_DIR when that is set.
 */
export function requireInstalled(name) {
  const dir = process.env.SERVER_TEST_DIR || process.cwd();
  try {
    return createRequire(path.join(path.resolve(dir), "package.json"))(name);
  } catch (e) {
    if (e.code !== "MODULE_NOT_FOUND") throw e;
    console.error(`cannot load the npm package '${name}' from ${dir}/node_modules: run ` +
                  "scripts/server_test_deps.sh BUILD_DIR, then run this script from " +
                  "BUILD_DIR/server_test (or set SERVER_TEST_DIR to that directory)");
    process.exit(2);
  }
}

/** Usage check for scripts called as `node SCRIPT.mjs LLM_BINARY MODEL.gguf [...]`. */
export function binaryAndModel(argv, usage) {
  const [binary, model] = argv.slice(2);
  if (!binary || !model) {
    console.error(`usage: ${usage}`);
    process.exit(2);
  }
  for (const [what, file] of [["LLM_BINARY", binary], ["MODEL", model]]) {
    if (!existsSync(file)) {
      console.error(`${what} ${file} does not exist\nusage: ${usage}`);
      process.exit(2);
    }
  }
  return { binary: path.resolve(binary), model: path.resolve(model) };
}

/**
 * Starts `BINARY serve --model MODEL --port 0 ...args` and resolves once it prints the line with
 * its address. Rejects (with what it printed) if it exits first or takes longer than timeoutMs.
 * Set SERVE_LOG=1 to echo the server's stderr.
 */
export function startServer(binary, model, args = [], { timeoutMs = 120_000 } = {}) {
  const argv = ["serve", "--model", model, "--port", "0", ...args];
  const child = spawn(binary, argv, { stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let log = "";
  const exited = new Promise((resolve) => {
    child.on("exit", (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (s) => { log += s; });
  child.stderr.setEncoding("utf8");
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let ready = false;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`llm serve did not print its address within ${timeoutMs} ms:\n${log}`));
    }, timeoutMs);
    child.stderr.on("data", (s) => {
      log += s;
      if (process.env.SERVE_LOG) process.stderr.write(s);
      const m = !ready && kReadyLine.exec(log);
      if (!m) return;
      ready = true;
      clearTimeout(timer);
      const server = {
        child,
        name: m[1],
        port: Number(m[3]),
        url: `http://127.0.0.1:${m[3]}`,
        startSeconds: (Date.now() - started) / 1000,
        // What the line says the model's load and the warm-up took (NaN when it does not say).
        loadSeconds: Number((/load ([\d.]+) s/.exec(log) ?? [])[1] ?? NaN),
        warmupSeconds: Number((/warm-up ([\d.]+) s/.exec(log) ?? [])[1] ?? NaN),
        log: () => log,
        /**
         * Sends `signal` and waits for the exit (SIGKILL after timeoutMs). Resolves to
         * {code, signal, log}; the caller checks that it stopped cleanly.
         */
        async stop(signal = "SIGTERM", stopTimeoutMs = 30_000) {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          let killer;
          const late = new Promise((r) => {
            killer = setTimeout(() => {
              child.kill("SIGKILL");
              r();
            }, stopTimeoutMs);
          });
          await Promise.race([exited, late]);
          clearTimeout(killer);
          const status = await exited;
          return { ...status, log };
        },
      };
      resolve(server);
    });
    child.on("error", (e) => {  // it could not be started at all
      running.delete(child);
      clearTimeout(timer);
      if (!ready) reject(new Error(`cannot run ${binary}: ${e.message}`));
    });
    exited.then(({ code, signal }) => {
      if (ready) return;
      clearTimeout(timer);
      reject(new Error(`${binary} ${argv.join(" ")} exited (code ${code}, signal ${signal}) ` +
                       `before it listened:\n${log}`));
    });
  });
}

/** POSTs `body` (an object, or a string sent as is) as JSON. Returns the fetch Response. */
export function postJson(url, body, { apiKey, signal, headers = {} } = {}) {
  const h = { "Content-Type": "application/json", ...headers };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return fetch(url, {
    method: "POST",
    headers: h,
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal,
  });
}

/**
 * Reads a server-sent event stream from a fetch Response, yielding one object per line of an
 * event: {comment: TEXT} for `: TEXT`, {done: true} for `data: [DONE]` (then it returns), and
 * {data: OBJECT} for `data: JSON`. Other fields (event:, id:) are yielded as {field, value}.
 * Throws if the stream ends without [DONE].
 */
export async function* readSse(response) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end; (end = buffer.indexOf("\n\n")) >= 0;) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (line.startsWith(":")) {
          yield { comment: line.slice(1).trim() };
        } else if (line.startsWith("data:")) {
          const data = line.slice(5).trimStart();
          if (data === "[DONE]") {
            yield { done: true };
            return;
          }
          yield { data: JSON.parse(data) };
        } else if (line) {
          const colon = line.indexOf(":");
          yield { field: line.slice(0, colon), value: line.slice(colon + 1).trim() };
        }
      }
    }
  }
  throw new Error(`the event stream ended without data: [DONE] (left: ${JSON.stringify(buffer)})`);
}

/**
 * Collects a streamed chat or text completion read with readSse: the concatenated content and
 * reasoning, the number of chunks that carried text, the chunks themselves, the finish reason,
 * timings, usage, the number of `: waiting` comments and the ms from `t0` to the first text.
 */
export async function collectStream(response, { t0 = performance.now(), onText } = {}) {
  const out = { content: "", reasoning: "", textChunks: 0, chunks: [], finishReason: null,
                timings: null, usage: null, waiting: 0, firstTextMs: null, done: false };
  for await (const e of readSse(response)) {
    if (e.comment !== undefined) {
      if (e.comment === "waiting") out.waiting += 1;
      continue;
    }
    if (e.done) {
      out.done = true;
      break;
    }
    if (!e.data) continue;
    const chunk = e.data;
    out.chunks.push(chunk);
    if (chunk.error) throw new Error(`error in the stream: ${JSON.stringify(chunk.error)}`);
    if (chunk.usage) out.usage = chunk.usage;
    if (chunk.timings) out.timings = chunk.timings;
    const choice = chunk.choices && chunk.choices[0];
    if (!choice) continue;
    const text = choice.delta ? choice.delta.content : choice.text;
    const reasoning = choice.delta ? choice.delta.reasoning_content : undefined;
    if (text || reasoning) {
      if (out.firstTextMs === null) out.firstTextMs = performance.now() - t0;
      out.textChunks += 1;
      out.content += text || "";
      out.reasoning += reasoning || "";
      if (onText) onText(out);
    }
    if (choice.finish_reason) out.finishReason = choice.finish_reason;
  }
  return out;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` (async, truthy when done) every `everyMs` until it holds or timeoutMs passes. */
export async function waitFor(check, what, { timeoutMs = 30_000, everyMs = 50 } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
