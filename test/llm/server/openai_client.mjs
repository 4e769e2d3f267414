// `llm serve` driven from the outside by the official `openai` npm package (plus plain fetch and
// curl where the client hides what is checked: raw SSE framing, error bodies, oversized bodies).
//
//   cd BUILD_DIR/server_test && node PATH/TO/test/llm/server/openai_client.mjs LLM_BINARY MODEL.gguf
//
// The npm packages come from BUILD_DIR/server_test/node_modules (scripts/server_test_deps.sh puts
// them there): they are loaded from the working directory (or $SERVER_TEST_DIR), not from next to
// this file, because the source tree has no node_modules. CTest (node_tests.cmake) runs it that
// way. The model is any GGUF the binary runs; the tests use make_demo_model's random-weight model,
// so they check structure, token counts, statuses and the equality of streamed and non-streamed
// greedy output, never the meaning of the text. Set SERVE_LOG=1 to see the servers' stderr.
// node:test reports each check; the exit status is non-zero when any failed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import {
  binaryAndModel, collectStream, modelId, postJson, readSse, requireInstalled, sleep,
  startServer, waitFor,
} from "./serve_util.mjs";

const { binary, model } = binaryAndModel(process.argv,
                                         "node openai_client.mjs LLM_BINARY MODEL.gguf");
const { OpenAI } = requireInstalled("openai");
const NAME = modelId(model);
const run = promisify(execFile);

// A client of one server; no retries, so a 429 or 5xx is seen as it is.
function clientFor(server, apiKey = "no-key-needed") {
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 120_000 });
}

// Starts a server for a describe block and stops it after, checking that it stopped cleanly.
function useServer(args = [], signal = "SIGTERM") {
  const holder = { server: null };
  before(async () => {
    holder.server = await startServer(binary, model, args);
  });
  after(async () => {
    if (!holder.server) return;
    const { code, signal: killedBy, log } = await holder.server.stop(signal);
    assert.equal(killedBy, null, `the server was killed by ${killedBy} after ${signal}:\n${log}`);
    assert.equal(code, 0, `exit status after ${signal}:\n${log}`);
    assert.match(log, /llm serve: stopped/);
  });
  return holder;
}

// The OpenAI error body: {"error": {"message", "type", "param", "code"}}.
async function expectError(res, status, { param, code, type } = {}) {
  const text = await res.text();
  assert.equal(res.status, status, `status of ${text}`);
  assert.match(res.headers.get("content-type") || "", /application\/json/);
  const body = JSON.parse(text);
  assert.ok(body.error, `no error object in ${text}`);
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, "string");
  assert.ok("param" in body.error && "code" in body.error, `param and code in ${text}`);
  if (param !== undefined) assert.equal(body.error.param, param, text);
  if (code !== undefined) assert.equal(body.error.code, code, text);
  if (type !== undefined) assert.equal(body.error.type, type, text);
  return body;
}

function checkUsage(usage, completionTokens) {
  assert.ok(usage, "usage is missing");
  assert.equal(usage.completion_tokens, completionTokens);
  assert.ok(usage.prompt_tokens > 0);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
  const cached = usage.prompt_tokens_details?.cached_tokens;
  assert.ok(Number.isInteger(cached) && cached >= 0 && cached <= usage.prompt_tokens,
            `cached_tokens ${cached}`);
}

function checkTimings(timings, predicted) {
  assert.ok(timings, "timings are missing");
  assert.equal(timings.predicted_n, predicted);
  for (const k of ["prompt_n", "prompt_ms", "predicted_ms"])
    assert.equal(typeof timings[k], "number", `timings.${k}`);
  if (predicted > 0) assert.ok(timings.predicted_per_second > 0, "predicted_per_second");
}

// Reads an openai-client stream of chat chunks into text, counts and the special chunks.
async function readChatStream(stream) {
  const out = { content: "", reasoning: "", chunks: [], finish: null, usage: null, timings: null };
  for await (const chunk of stream) {
    out.chunks.push(chunk);
    if (chunk.usage) out.usage = chunk.usage;
    if (chunk.timings) out.timings = chunk.timings;
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.content += choice.delta?.content ?? "";
    out.reasoning += choice.delta?.reasoning_content ?? "";
    if (choice.finish_reason) out.finish = choice.finish_reason;
  }
  return out;
}

const greedy = { temperature: 0, ignore_eos: true };
const noThinking = { chat_template_kwargs: { enable_thinking: false } };
const say = (text) => [{ role: "user", content: text }];

describe("llm serve (defaults)", () => {
  const s = useServer();
  let client;
  before(() => {
    client = clientFor(s.server);
  });

  it("prints its model id and answers /health", async () => {
    assert.equal(s.server.name, NAME);
    const res = await fetch(`${s.server.url}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok" });
  });

  it("lists the model (client.models.list and GET /v1/models)", async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      assert.equal(m.object, "model");
      ids.push(m.id);
    }
    assert.deepEqual(ids, [NAME]);
    const raw = await (await fetch(`${s.server.url}/v1/models`)).json();
    assert.equal(raw.object, "list");
    assert.equal(raw.data.length, 1);
    assert.equal(raw.data[0].id, NAME);
    const one = await client.models.retrieve(NAME);
    assert.equal(one.id, NAME);
  });

  for (const thinking of [false, true]) {
    it(`chat: streamed equals non-streamed (greedy, 16 tokens, enable_thinking ${thinking})`,
       async () => {
         const request = { model: NAME, messages: say("Tell me about the sea."), max_tokens: 16,
                           ...greedy, chat_template_kwargs: { enable_thinking: thinking } };
         const whole = await client.chat.completions.create(request);
         assert.equal(whole.object, "chat.completion");
         assert.equal(whole.model, NAME);
         assert.match(whole.id, /^chatcmpl-/);
         assert.equal(whole.choices.length, 1);
         const message = whole.choices[0].message;
         assert.equal(message.role, "assistant");
         assert.equal(typeof message.content, "string");
         assert.equal(whole.choices[0].finish_reason, "length");
         checkUsage(whole.usage, 16);
         checkTimings(whole.timings, 16);
         if (!thinking) assert.equal(message.reasoning_content, undefined);

         const stream = await client.chat.completions.create(
             { ...request, stream: true, stream_options: { include_usage: true } });
         const got = await readChatStream(stream);
         const first = got.chunks[0];
         assert.equal(first.object, "chat.completion.chunk");
         assert.deepEqual(first.choices[0].delta, { role: "assistant", content: "" });
         assert.equal(got.content, message.content);
         assert.equal(got.reasoning, message.reasoning_content ?? "");
         assert.equal(got.finish, "length");
         checkUsage(got.usage, 16);
         assert.equal(got.usage.prompt_tokens, whole.usage.prompt_tokens);
         checkTimings(got.timings, 16);
         const last = got.chunks.at(-1);
         assert.deepEqual(last.choices, []);
         assert.ok(got.chunks.every((c) => c.id === first.id), "one id for all chunks");
       });
  }

  it("completions: streamed equals non-streamed (text prompt and token-id prompt)", async () => {
    for (const prompt of ["Once upon a time", [72, 101, 108, 108, 111, 44, 32]]) {
      const request = { model: NAME, prompt, max_tokens: 16, ...greedy };
      const whole = await client.completions.create(request);
      assert.equal(whole.object, "text_completion");
      assert.match(whole.id, /^cmpl-/);
      assert.equal(typeof whole.choices[0].text, "string");
      assert.equal(whole.choices[0].finish_reason, "length");
      checkUsage(whole.usage, 16);
      if (Array.isArray(prompt)) assert.equal(whole.usage.prompt_tokens, prompt.length);
      checkTimings(whole.timings, 16);

      const stream = await client.completions.create(
          { ...request, stream: true, stream_options: { include_usage: true } });
      let text = "", finish = null, usage = null;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices[0];
        if (!choice) continue;
        text += choice.text;
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      assert.equal(text, whole.choices[0].text, `prompt ${JSON.stringify(prompt)}`);
      assert.equal(finish, "length");
      checkUsage(usage, 16);
    }
  });

  it("a stop string cuts the text before it (finish_reason stop)", async () => {
    const request = { model: NAME, prompt: "The list of colours:", max_tokens: 32, ...greedy };
    const full = (await client.completions.create(request)).choices[0].text;
    // A stop string from the middle of the greedy text: 3 characters, no U+FFFD (bytes that were
    // not UTF-8), whose first occurrence is where it was taken.
    const chars = Array.from(full);
    let stop = null, at = -1;
    for (let i = Math.floor(chars.length / 3); i + 3 <= chars.length && !stop; ++i) {
      const candidate = chars.slice(i, i + 3).join("");
      const offset = chars.slice(0, i).join("").length;
      if (!candidate.includes("\uFFFD") && candidate.trim() && full.indexOf(candidate) === offset) {
        stop = candidate;
        at = offset;
      }
    }
    assert.ok(stop, `no usable stop string in ${JSON.stringify(full)}`);
    const expected = full.slice(0, at);
    const cut = await client.completions.create({ ...request, stop: [stop] });
    assert.equal(cut.choices[0].text, expected, `stop ${JSON.stringify(stop)} in ${JSON.stringify(full)}`);
    assert.equal(cut.choices[0].finish_reason, "stop");
    assert.ok(cut.usage.completion_tokens < 32);

    const stream = await client.completions.create({ ...request, stop: stop, stream: true });
    let text = "", finish = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, expected);
    assert.equal(finish, "stop");
  });

  it("SSE framing, stream_options.include_usage (raw fetch)", async () => {
    for (const includeUsage of [false, true]) {
      const body = { model: NAME, messages: say("Hi"), max_tokens: 4, stream: true, ...greedy,
                     ...noThinking };
      if (includeUsage) body.stream_options = { include_usage: true };
      const res = await postJson(`${s.server.url}/v1/chat/completions`, body);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type"), /^text\/event-stream/);
      const got = await collectStream(res);
      assert.ok(got.done, "ends with data: [DONE]");
      const usageChunks = got.chunks.filter((c) => c.usage);
      const finishIndex = got.chunks.findIndex((c) => c.choices[0]?.finish_reason);
      assert.ok(finishIndex >= 0, "a chunk with finish_reason");
      checkTimings(got.chunks[finishIndex].timings, 4);
      if (includeUsage) {
        assert.equal(usageChunks.length, 1);
        assert.equal(got.chunks.at(-1), usageChunks[0], "the usage chunk comes last");
        assert.deepEqual(usageChunks[0].choices, []);
        checkUsage(usageChunks[0].usage, 4);
        assert.equal(finishIndex, got.chunks.length - 2);
      } else {
        assert.equal(usageChunks.length, 0, "no usage without include_usage");
        assert.equal(finishIndex, got.chunks.length - 1);
      }
    }
  });

  it("4 concurrent streaming clients, one aborts after its first text: the others get 64 " +
     "tokens, the aborted generation stops", async () => {
    const kTokens = 64, kAbortedMax = 3000;
    const t0 = performance.now();
    let healthDuringGeneration = null;
    const one = async (i) => {
      const abort = i === 0;
      const stream = await client.chat.completions.create({
        model: NAME, messages: say(`Client ${i}: count to a hundred.`), stream: true,
        stream_options: { include_usage: true }, max_tokens: abort ? kAbortedMax : kTokens,
        ...greedy, ...noThinking,
      });
      const out = { content: "", usage: null, timings: null, finish: null, aborted: false };
      for await (const chunk of stream) {
        if (chunk.usage) out.usage = chunk.usage;
        if (chunk.timings) out.timings = chunk.timings;
        const choice = chunk.choices[0];
        if (choice?.finish_reason) out.finish = choice.finish_reason;
        if (!choice?.delta?.content) continue;
        out.content += choice.delta.content;
        if (healthDuringGeneration === null) {
          healthDuringGeneration = -1;
          healthDuringGeneration = (await fetch(`${s.server.url}/health`)).status;
        }
        if (abort) {
          stream.controller.abort();
          out.aborted = true;
          break;
        }
      }
      return out;
    };
    // The aborting client asks first, so it is the one generating when it leaves.
    const first = one(0);
    await sleep(50);
    const results = await Promise.all([first, one(1), one(2), one(3)]);
    const wall = (performance.now() - t0) / 1000;
    assert.ok(results[0].aborted && results[0].content.length > 0);
    for (const r of results.slice(1)) {
      assert.equal(r.finish, "length");
      checkUsage(r.usage, kTokens);
      checkTimings(r.timings, kTokens);
    }
    assert.equal(healthDuringGeneration, 200, "/health while a generation runs");
    assert.equal((await fetch(`${s.server.url}/health`)).status, 200);
    // Had the aborted generation run on, the others would have waited for its kAbortedMax tokens.
    const rate = Math.min(...results.slice(1).map((r) => r.timings.predicted_per_second));
    assert.ok(wall < 0.5 * kAbortedMax / rate,
              `4 clients took ${wall.toFixed(2)} s at ${rate.toFixed(0)} tok/s: the aborted ` +
              "generation seems to have run on");
    console.log(`# 4 clients: ${wall.toFixed(2)} s wall, ${rate.toFixed(0)} tok/s`);
  });

  it("bad requests get OpenAI error bodies with the right status", async () => {
    const chat = `${s.server.url}/v1/chat/completions`;
    const completions = `${s.server.url}/v1/completions`;
    const cases = [
      ["malformed JSON", chat, '{"model": "x", "messages": [', 400, {}],
      ["a body that is not an object", chat, "[1, 2]", 400, {}],
      ["missing messages", chat, { model: NAME }, 400, { param: "messages" }],
      ["empty messages", chat, { model: NAME, messages: [] }, 400, { param: "messages" }],
      ["missing model", chat, { messages: say("hi") }, 400, { param: "model" }],
      ["temperature of the wrong type", chat,
       { model: NAME, messages: say("hi"), temperature: "hot" }, 400, { param: "temperature" }],
      ["max_tokens of the wrong type", chat,
       { model: NAME, messages: say("hi"), max_tokens: "many" }, 400, { param: "max_tokens" }],
      ["unknown model", chat, { model: "no-such-model", messages: say("hi") }, 404,
       { code: "model_not_found" }],
      ["missing prompt", completions, { model: NAME }, 400, { param: "prompt" }],
      ["unknown model (completions)", completions, { model: "gpt-4o", prompt: "hi" }, 404,
       { code: "model_not_found" }],
    ];
    for (const [what, url, body, status, expect] of cases) {
      try {
        await expectError(await postJson(url, body), status,
                          { type: "invalid_request_error", ...expect });
      } catch (e) {
        e.message = `${what}: ${e.message}`;
        throw e;
      }
    }
    // The client raises the matching error class.
    await assert.rejects(client.chat.completions.create({ model: "nope", messages: say("hi") }),
                         (e) => e.status === 404 && e.code === "model_not_found");
    await assert.rejects(
        client.chat.completions.create({ model: NAME, messages: say("hi"), temperature: "hot" }),
        (e) => e.status === 400 && e.param === "temperature");
  });

  it("a body over the limit (9 MiB) gets 413", async () => {
    const big = JSON.stringify({ model: NAME, messages: say("x".repeat(9 << 20)) });
    let res;
    try {
      res = await postJson(`${s.server.url}/v1/chat/completions`, big);
    } catch (e) {
      assert.fail(`the 9 MiB request failed without a response: ${e.cause?.message ?? e.message}`);
    }
    await expectError(res, 413);
    assert.equal((await fetch(`${s.server.url}/health`)).status, 200);
  });

  it("curl: one chat completion, and one streamed with curl -sN", async (t) => {
    try {
      await run("curl", ["--version"]);
    } catch {
      t.skip("curl is not installed");
      return;
    }
    const body = JSON.stringify({ model: NAME, messages: say("curl says hi"), max_tokens: 8,
                                  ...greedy, ...noThinking });
    const url = `${s.server.url}/v1/chat/completions`;
    const common = ["-sS", "--fail-with-body", "-H", "Content-Type: application/json"];
    const whole = JSON.parse((await run("curl", [...common, "-d", body, url])).stdout);
    assert.equal(whole.object, "chat.completion");
    checkUsage(whole.usage, 8);

    const streamed = (await run("curl", [...common, "-N", "-d",
                                         JSON.stringify({ ...JSON.parse(body), stream: true }),
                                         url])).stdout;
    const events = streamed.split("\n\n").filter((e) => e.length > 0);
    assert.equal(events.at(-1), "data: [DONE]");
    let content = "";
    for (const e of events.slice(0, -1)) {
      if (e.startsWith(":")) continue;
      assert.ok(e.startsWith("data: "), `event ${JSON.stringify(e)}`);
      content += JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? "";
    }
    assert.equal(content, whole.choices[0].message.content);
  });
});

// The demo model generates thousands of tokens a second: a context of 32768 lets the first request
// run long enough (seconds) for the checks made while it runs.
describe("llm serve --max-queue 1 --max-context 32768 (stopped with SIGINT)", () => {
  const kLong = 30_000;
  const s = useServer(["--max-queue", "1", "--max-context", "32768"], "SIGINT");

  it("a third request gets 429 with Retry-After; a client that leaves frees its place",
     async () => {
    const url = `${s.server.url}/v1/chat/completions`;
    const request = (maxTokens, signal) => postJson(url, {
      model: NAME, messages: say("Write a long story."), stream: true, max_tokens: maxTokens,
      ...greedy, ...noThinking,
    }, { signal });
    // A: a long generation, running.
    const abortA = new AbortController();
    const resA = await request(kLong, abortA.signal);
    assert.equal(resA.status, 200);
    const eventsA = readSse(resA);
    let aText = false, aFinished = false;
    // Each reader resolves to the error that ended it (null at [DONE]), so that nothing is left
    // rejecting after a failed check.
    const readA = (async () => {
      try {
        for await (const e of eventsA) {
          if (e.data?.choices[0]?.delta?.content) aText = true;
          if (e.data?.choices[0]?.finish_reason) aFinished = true;
        }
        return null;
      } catch (e) {
        return e;
      }
    })();
    await waitFor(() => aText, "the first request's text");

    // B: waits behind A; the server keeps its stream alive with `: waiting` comments.
    const abortB = new AbortController();
    const resB = await request(8, abortB.signal);
    assert.equal(resB.status, 200);
    let bWaiting = 0, bText = false;
    const readB = (async () => {
      try {
        for await (const e of readSse(resB)) {
          if (e.comment === "waiting") bWaiting += 1;
          if (e.data?.choices[0]?.delta?.content) bText = true;
        }
        return null;
      } catch (e) {
        return e;
      }
    })();
    await waitFor(() => bWaiting > 0, "a `: waiting` comment on the queued stream",
                  { timeoutMs: 10_000 });
    assert.ok(!bText, "the queued request generated while the first one ran");

    // C (the openai client) and D (fetch): the queue is full.
    const client = clientFor(s.server);
    await assert.rejects(
        client.chat.completions.create({ model: NAME, messages: say("me too"), max_tokens: 4 }),
        (e) => {
          assert.equal(e.status, 429);
          assert.equal(e.constructor.name, "RateLimitError");
          assert.match(String(e.headers?.get?.("retry-after") ?? e.headers?.["retry-after"]),
                       /^\d+$/);
          return true;
        });
    const resD = await postJson(url, { model: NAME, messages: say("and me"), max_tokens: 1 });
    assert.match(resD.headers.get("retry-after") ?? "", /^[1-9]\d*$/, "Retry-After");
    await expectError(resD, 429, { type: "rate_limit_error", code: "rate_limit_exceeded" });
    assert.equal((await fetch(`${s.server.url}/health`)).status, 200);

    // B leaves while it waits: its place frees (the server notices at its next comment).
    abortB.abort();
    assert.equal((await readB)?.name, "AbortError");
    let resE = null;
    await waitFor(async () => {
      const r = await request(8);
      if (r.status === 429) {
        await r.body.cancel();
        return false;
      }
      resE = r;
      return true;
    }, "a place in the queue after the waiting client left", { timeoutMs: 10_000, everyMs: 250 });
    assert.equal(resE.status, 200);

    // A leaves while it generates: E runs next, and gets its 8 tokens.
    assert.ok(!aFinished, "the first request finished before the checks (the model is too " +
                          `fast for a ${kLong}-token request to still run)`);
    abortA.abort();
    assert.equal((await readA)?.name, "AbortError");
    const e = await collectStream(resE);
    assert.equal(e.finishReason, "length");
    assert.equal(e.timings.predicted_n, 8);
    assert.ok(e.waiting >= 0);
  });

  it("SIGINT while a generation streams: the stream ends and the server exits 0", async () => {
    const res = await postJson(`${s.server.url}/v1/chat/completions`, {
      model: NAME, messages: say("One more long story."), stream: true, max_tokens: kLong,
      ...greedy, ...noThinking,
    });
    assert.equal(res.status, 200);
    let text = false, ended = null, cutAsLength = false;
    const reader = (async () => {
      try {
        for await (const e of readSse(res)) {
          if (e.data?.choices?.[0]?.delta?.content) text = true;
          if (e.data?.error) ended = `an error event: ${e.data.error.message}`;
          if (e.data?.choices?.[0]?.finish_reason) {
            ended = `finish_reason ${e.data.choices[0].finish_reason} after ` +
                    `${e.data.timings?.predicted_n} of ${kLong} tokens`;
            // "length" means max_tokens or the context was reached, which a stop cannot claim.
            cutAsLength = e.data.choices[0].finish_reason === "length" &&
                          e.data.timings?.predicted_n < kLong;
          }
        }
        return ended ?? "[DONE]";
      } catch (e) {
        return `the connection closed (${e.cause?.code ?? e.message})`;
      }
    })();
    await waitFor(() => text, "the long request's text");
    const t0 = performance.now();
    const { code, signal, log } = await s.server.stop("SIGINT");
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(signal, null, `killed by ${signal}:\n${log}`);
    assert.equal(code, 0, log);
    assert.match(log, /llm serve: stopped/);
    assert.ok(seconds < 10, `the server took ${seconds.toFixed(1)} s to stop`);
    const how = await Promise.race([reader, sleep(10_000).then(() => null)]);
    assert.ok(how, "the client's stream did not end after the server stopped");
    console.log(`# stopped in ${seconds.toFixed(2)} s; the open stream saw: ${how}`);
    assert.ok(!cutAsLength, `the generation the stop cut short ended with ${how}: the client ` +
                            "cannot tell it from a complete answer");
  });
});

describe("llm serve --api-key sekret", () => {
  const s = useServer(["--api-key", "sekret"]);

  it("a wrong or missing key gets 401; the right key works; /health and / need none",
     async () => {
    await assert.rejects(clientFor(s.server, "wrong").models.list(),
                         (e) => e.status === 401 && e.constructor.name === "AuthenticationError");
    await assert.rejects(
        clientFor(s.server, "wrong").chat.completions.create(
            { model: NAME, messages: say("hi"), max_tokens: 2 }),
        (e) => e.status === 401);
    await expectError(await fetch(`${s.server.url}/v1/models`), 401);
    await expectError(await postJson(`${s.server.url}/v1/chat/completions`,
                                     { model: NAME, messages: say("hi"), max_tokens: 2 },
                                     { apiKey: "sekret2" }),
                      401);

    const client = clientFor(s.server, "sekret");
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, [NAME]);
    const r = await client.chat.completions.create(
        { model: NAME, messages: say("hi"), max_tokens: 4, ...greedy, ...noThinking });
    checkUsage(r.usage, 4);

    assert.equal((await fetch(`${s.server.url}/health`)).status, 200);
    const page = await fetch(`${s.server.url}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type"), /text\/html/);
    assert.match(await page.text(), /id="messages"/);
  });
});

describe("llm serve --max-context 64", () => {
  const s = useServer(["--max-context", "64"]);

  it("a prompt longer than the context gets 400 context_length_exceeded", async () => {
    const long = "lorem ipsum dolor sit amet ".repeat(40);
    await expectError(await postJson(`${s.server.url}/v1/chat/completions`,
                                     { model: NAME, messages: say(long), max_tokens: 4 }),
                      400, { code: "context_length_exceeded", param: "messages" });
    await expectError(await postJson(`${s.server.url}/v1/completions`,
                                     { model: NAME, prompt: long, max_tokens: 4 }),
                      400, { code: "context_length_exceeded", param: "prompt" });
    await expectError(await postJson(`${s.server.url}/v1/completions`,
                                     { model: NAME, prompt: new Array(65).fill(65), max_tokens: 1 }),
                      400, { code: "context_length_exceeded" });
    // What fits still runs, and a request without max_tokens ends when the context is full (the
    // last token sampled is never fed back, so it needs no place: 64 + 1 tokens in all).
    const client = clientFor(s.server);
    const r = await client.completions.create({ model: NAME, prompt: "hi", temperature: 0 });
    assert.ok(r.usage.total_tokens <= 65, `total_tokens ${r.usage.total_tokens}`);
    assert.ok(["stop", "length"].includes(r.choices[0].finish_reason));
    const ok = await client.completions.create({ model: NAME, prompt: "short", max_tokens: 4,
                                                 ...greedy });
    checkUsage(ok.usage, 4);
  });
});
