// The chat page that `llm serve` serves at /, driven in headless Chromium by puppeteer-core:
//
//   cd BUILD_DIR/server_test && node PATH/TO/test/llm/server/chat_page.mjs LLM_BINARY MODEL.gguf
//
// puppeteer-core comes from BUILD_DIR/server_test/node_modules (scripts/server_test_deps.sh): it
// is loaded from the working directory (or $SERVER_TEST_DIR), not from next to this file. The
// browser is /usr/bin/chromium (Debian's package), or $CHROMIUM; it runs with --no-sandbox since
// CI runs as root.
//
// Checks: the page shows the model id; Enter in #input sends; the answer streams into the
// assistant message (its text grows while #stop shows) and #speed shows tok/s; a second turn sends
// the whole conversation; #stop ends a long answer with a "stopped" note and frees the server
// (the next request is answered at once); #new clears the conversation.
//
// That the answer grows while it streams is not left to timing: the server sends what the model
// generated since its last event, so on a loaded machine a short answer often comes in one or two
// events, and the page, which draws once per animation frame, may take them all between two
// frames. The two-turn block opens the page through a relay (below) that holds the first answer's
// stream after its first event with text until the page shows that text, #stop and tok/s, and the
// answer is long enough (512 tokens) that the server sends more text after that event.
//
// The page sends no max_tokens and samples at temperature 1, so with the random-weight demo model
// an answer could end at any token. To make lengths deterministic the test rewrites the page's
// request on its way out (puppeteer request interception): it adds `ignore_eos: true` and a
// `max_tokens`, and leaves the rest as the page wrote it (which is checked).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import http from "node:http";
import { after, before, describe, it } from "node:test";

import {
  binaryAndModel, modelId, postJson, requireInstalled, sleep, startServer,
} from "./serve_util.mjs";

const { binary, model } = binaryAndModel(process.argv, "node chat_page.mjs LLM_BINARY MODEL.gguf");
const puppeteer = requireInstalled("puppeteer-core");
const NAME = modelId(model);
const kChromium = process.env.CHROMIUM || "/usr/bin/chromium";

let browser;
before(async () => {
  if (!existsSync(kChromium))
    throw new Error(`${kChromium} is missing (scripts/setup.sh installs Debian's chromium; ` +
                    "or set CHROMIUM to a Chrome or Chromium binary)");
  browser = await puppeteer.launch({
    executablePath: kChromium,
    headless: true,
    protocolTimeout: 30_000,  // a page too busy to answer fails the check in 30 s
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
});
after(async () => {
  if (browser) await browser.close();
});

// An HTTP relay to `target` (the server's URL) on a port of its own: requests and answers pass
// through unchanged, and a page that leaves is left by the relay too (the server sees it go).
// holdAfterFirstText() arms it for the next chat completion: its events pass one by one, and the
// stream is held after the first event with content until release() (the server generates on,
// the rest waits in the relay). `contentEvents` counts that stream's events with content.
async function startRelay(target) {
  let armed = null;
  const relay = {
    url: null,
    holdAfterFirstText() {
      let release;
      const gate = {
        released: new Promise((r) => { release = r; }),
        contentEvents: 0,
        release: () => release(),
      };
      armed = gate;
      return gate;
    },
  };
  const server = http.createServer((req, res) => {
    const gate = req.method === "POST" && req.url === "/v1/chat/completions" ? armed : null;
    if (gate) armed = null;
    const upstream = http.request(`${target}${req.url}`,
                                  { method: req.method, headers: req.headers, agent: false });
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    upstream.on("response", async (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      if (!gate) {
        answer.pipe(res);
        return;
      }
      answer.setEncoding("utf8");
      let buffer = "", held = false;
      try {
        for await (const text of answer) {
          buffer += text;
          for (let end; (end = buffer.indexOf("\n\n")) >= 0;) {
            const event = buffer.slice(0, end + 2);
            buffer = buffer.slice(end + 2);
            res.write(event);
            const data = /^data: (\{.*)/.exec(event)?.[1];
            if (!data || !JSON.parse(data).choices?.[0]?.delta?.content) continue;
            gate.contentEvents += 1;
            if (held) continue;
            held = true;
            await gate.released;  // nothing more passes until the test releases the stream
          }
        }
        res.end(buffer);
      } catch {
        res.destroy();
      }
    });
    req.pipe(upstream);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  relay.url = `http://127.0.0.1:${server.address().port}`;
  relay.close = () => {
    if (armed) armed.release();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  };
  return relay;
}

// Starts a server for a describe block and opens the page on it (through a relay when
// `{relay: true}`). `maxTokens` is what the intercepted chat requests get; `sent` collects the
// bodies the page wrote.
function usePage(serverArgs, maxTokens, { relay = false } = {}) {
  const ctx = { server: null, relay: null, page: null, sent: [], errors: [] };
  before(async () => {
    ctx.server = await startServer(binary, model, serverArgs);
    if (relay) ctx.relay = await startRelay(ctx.server.url);
    const page = await browser.newPage();
    page.setDefaultTimeout(60_000);
    page.on("pageerror", (e) => ctx.errors.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      // The browser asks for /favicon.ico on its own; the page has none (a 404, not the page's).
      if (m.type() === "error" && !/\/favicon\.ico$/.test(m.location()?.url ?? ""))
        ctx.errors.push(`console error: ${m.text()} (${m.location()?.url ?? "?"})`);
    });
    await page.setRequestInterception(true);
    page.on("request", (request) => {
      if (request.method() === "POST" && request.url().endsWith("/v1/chat/completions")) {
        const body = JSON.parse(request.postData());
        ctx.sent.push(structuredClone(body));
        request.continue({ postData: JSON.stringify({ ...body, ignore_eos: true,
                                                      max_tokens: maxTokens }) });
      } else {
        request.continue();
      }
    });
    await page.goto(`${(ctx.relay ?? ctx.server).url}/`);
    ctx.page = page;
  });
  after(async () => {
    // A page that hangs is left to browser.close().
    if (ctx.page) await Promise.race([ctx.page.close().catch(() => {}), sleep(5000)]);
    if (ctx.relay) await ctx.relay.close();
    if (!ctx.server) return;
    const { code, signal, log } = await ctx.server.stop();
    assert.equal(signal, null, log);
    assert.equal(code, 0, log);
    assert.match(log, /llm serve: stopped/);
  });
  return ctx;
}

// Records, at every change of the page, the last assistant message's text length, #speed and
// whether #stop shows, into window.__trace.
async function traceAnswers(page) {
  await page.evaluate(() => {
    window.__trace = [];
    const $ = (id) => document.getElementById(id);
    const record = () => {
      const answers = document.querySelectorAll("#messages .message.assistant");
      const last = answers[answers.length - 1];
      window.__trace.push({ length: last ? last.textContent.length : 0,
                            speed: $("speed").textContent, streaming: !$("stop").hidden });
    };
    new MutationObserver(record).observe(document.body, {
      subtree: true, childList: true, characterData: true, attributes: true,
    });
  });
}

const idle = (page) => page.waitForFunction(() => {
  const $ = (id) => document.getElementById(id);
  return $("stop").hidden && !$("send").hidden && !$("input").disabled;
});

// Waits until the page holds `n` answers and the last one has ended: the final #speed (with the
// token count from the server's timings), or a stopped / error note.
const answered = (page, n) => page.waitForFunction((n) => {
  const $ = (id) => document.getElementById(id);
  const answers = document.querySelectorAll("#messages .message.assistant");
  if (answers.length !== n || !$("stop").hidden || $("send").hidden) return false;
  const last = answers[n - 1];
  return /tokens\)$/.test($("speed").textContent) || last.querySelector(".stopped, .error");
}, {}, n);

const state = (page) => page.evaluate(() => {
  const texts = (sel) => Array.from(document.querySelectorAll(sel), (e) => e.textContent);
  return {
    users: texts("#messages .message.user"),
    answers: texts("#messages .message.assistant"),
    stopped: texts("#messages .message.assistant .stopped"),
    errors: texts("#messages .error"),
    speed: document.getElementById("speed").textContent,
    model: document.getElementById("model").textContent,
  };
});

// Types `text` into #input and presses Enter.
async function send(page, text) {
  await page.click("#input");
  await page.type("#input", text);
  await page.keyboard.press("Enter");
}

// The answers are 512 tokens: the second turn's prompt holds the first answer, whose text (random
// bytes, many of them U+FFFD) can take more tokens than were generated, so the context is 4096.
describe("chat page: two turns (--max-context 4096)", () => {
  const kTokens = 512;
  const ctx = usePage(["--max-context", "4096"], kTokens, { relay: true });

  it("shows the model id", async () => {
    await ctx.page.waitForFunction((name) => document.getElementById("model").textContent === name,
                                   {}, NAME);
    assert.equal(await ctx.page.title(), "ugrad chat");
  });

  it("Enter sends; the answer streams and #speed shows tok/s", async () => {
    const { page } = ctx;
    // The demo model answers in milliseconds: the relay holds the stream after its first text,
    // as a slow model would pause, until the page shows that text while it streams.
    const gate = ctx.relay.holdAfterFirstText();
    await traceAnswers(page);
    const t0 = performance.now();
    await send(page, "Hello there");
    let shown;
    try {
      // Only the first event with text passed the relay: the page shows it while it streams.
      shown = await (await page.waitForFunction(() => {
        const $ = (id) => document.getElementById(id);
        const answers = document.querySelectorAll("#messages .message.assistant");
        const length = answers.length === 1 ? answers[0].textContent.length : 0;
        const speed = /^\d+(\.\d+)? tok\/s$/.test($("speed").textContent);
        return length > 0 && !$("stop").hidden && speed && length;
      })).jsonValue();
    } catch (e) {
      throw new Error("the page did not show the start of the answer, #stop and tok/s while the " +
                      `stream was held (${gate.contentEvents} events with text passed): ` +
                      e.message);
    } finally {
      gate.release();
    }
    await answered(page, 1);
    const seconds = (performance.now() - t0) / 1000;
    const s = await state(page);
    assert.deepEqual(s.users, ["Hello there"]);
    assert.equal(s.answers.length, 1);
    assert.ok(s.answers[0].length > 0, "the answer is empty");
    assert.deepEqual(s.errors, []);
    assert.deepEqual(s.stopped, []);
    assert.match(s.speed, new RegExp(`^\\d+(\\.\\d+)? tok/s \\(${kTokens} tokens\\)$`));
    assert.equal(await page.$eval("#input", (e) => e.value), "", "#input was cleared");

    // The text shown while the stream was held is the start of the answer, which then grew.
    const final = s.answers[0].length;
    assert.ok(shown < final, `the page showed ${shown} characters while the stream was held, ` +
              `and ${final} at the end (the server sent ${gate.contentEvents} events with text)`);
    const trace = await page.evaluate(() => window.__trace);
    assert.ok(trace.some((t) => t.streaming && t.length > 0 && t.length < final),
              "the answer did not grow while it streamed: (length, streaming) at each change: " +
              trace.map((t) => `${t.length}${t.streaming ? "+" : ""}`).join(" "));
    assert.ok(trace.some((t) => t.streaming && /tok\/s/.test(t.speed)),
              "#speed showed no tok/s while streaming");

    assert.equal(ctx.sent.length, 1);
    const body = ctx.sent[0];
    assert.equal(body.model, NAME);
    assert.equal(body.stream, true);
    assert.deepEqual(body.messages, [{ role: "user", content: "Hello there" }]);
    console.log(`# first answer: ${s.answers[0].length} characters (${shown} shown while held, ` +
                `${gate.contentEvents} events with text) in ${seconds.toFixed(2)} s, ${s.speed}`);
  });

  it("a second turn sends the whole conversation", async () => {
    const { page } = ctx;
    await send(page, "And then?");
    await answered(page, 2);
    const s = await state(page);
    assert.deepEqual(s.users, ["Hello there", "And then?"]);
    assert.equal(s.answers.length, 2);
    assert.ok(s.answers[1].length > 0);
    assert.deepEqual(s.errors, []);
    assert.equal(ctx.sent.length, 2);
    const messages = ctx.sent[1].messages;
    assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.equal(messages[0].content, "Hello there");
    assert.equal(typeof messages[1].content, "string");
    assert.ok(s.answers[0].includes(messages[1].content),
              "the first answer sent back is not the one shown");
    assert.equal(messages[2].content, "And then?");
  });

  it("#new clears the conversation", async () => {
    const { page } = ctx;
    await page.click("#new");
    await page.waitForFunction(() => !document.querySelector("#messages .message"));
    const s = await state(page);
    assert.deepEqual(s.users, []);
    assert.deepEqual(s.answers, []);
    assert.equal(s.speed, "");
    await send(page, "Fresh start");
    await answered(page, 1);
    assert.deepEqual(ctx.sent.at(-1).messages, [{ role: "user", content: "Fresh start" }]);
    assert.deepEqual(ctx.errors, []);
  });
});

// The demo model generates thousands of tokens a second: a context of 32768 lets an answer run
// for seconds on the server, long enough to click #stop in the middle of it.
describe("chat page: stopping a long answer (--max-context 32768)", () => {
  const kLong = 30_000;
  const ctx = usePage(["--max-context", "32768"], kLong);

  // The server's decode speed, from a non-streamed request of 1000 tokens.
  async function serverRate(url) {
    const res = await postJson(`${url}/v1/completions`, {
      model: NAME, prompt: "rate", max_tokens: 1000, temperature: 0, ignore_eos: true,
    });
    return (await res.json()).timings.predicted_per_second;
  }

  // Sends a message, waits until its answer streams, clicks #stop and waits for the note. Fails
  // with how long the page took when it does not react within 20 s.
  async function sendAndStop(page, text) {
    await send(page, text);
    const t0 = performance.now();
    let step = "the answer to stream";
    try {
      await page.waitForFunction(() => {
        const all = document.querySelectorAll("#messages .message.assistant");
        const a = all[all.length - 1];
        return a && a.textContent.length > 20 && !document.getElementById("stop").hidden &&
               /tok\/s/.test(document.getElementById("speed").textContent);
      }, { timeout: 20_000 });
      step = "#stop to end the answer";
      await page.click("#stop");
      await page.waitForSelector("#messages .message.assistant:last-child .stopped",
                                 { timeout: 20_000 });
      await idle(page);
    } catch (e) {
      throw new Error(`the page did not react in time: waited ${((performance.now() - t0) / 1000)
          .toFixed(1)} s for ${step}: ${e.message}`);
    }
  }

  it("#stop ends the answer with a note, and the server is free at once (slow network)",
     async () => {
    const { page, server } = ctx;
    await page.waitForFunction((name) => document.getElementById("model").textContent === name,
                               {}, NAME);
    const rate = await serverRate(server.url);
    // The answer trickles in as it would from a slow model, while the server runs on.
    await page.emulateNetworkConditions({ download: 16 * 1024, upload: 1 << 24, latency: 0 });
    await sendAndStop(page, "Tell me a very long story.");
    const s = await state(page);
    assert.deepEqual(s.stopped, ["stopped"]);
    assert.deepEqual(s.errors, []);
    assert.equal(await page.$eval("#stop", (e) => e.hidden), true);
    assert.equal(await page.$eval("#send", (e) => e.hidden), false);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);

    // Had the stopped generation run on, this request would wait behind its kLong tokens.
    const t0 = performance.now();
    const res = await postJson(`${server.url}/v1/chat/completions`, {
      model: NAME, messages: [{ role: "user", content: "hi" }], max_tokens: 4, temperature: 0,
      ignore_eos: true,
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).usage.completion_tokens, 4);
    const seconds = (performance.now() - t0) / 1000;
    assert.ok(seconds < 0.5 * kLong / rate,
              `the next request took ${seconds.toFixed(2)} s (the server decodes ${rate.toFixed(0)}` +
              " tok/s): the stopped generation seems to have run on");
    console.log(`# server at ${rate.toFixed(0)} tok/s; after #stop the next request took ` +
                `${seconds.toFixed(2)} s`);

    // The page goes on: the stopped answer's text is part of the next turn.
    await sendAndStop(page, "Short one.");
    assert.deepEqual(ctx.sent.at(-1).messages.map((m) => m.role), ["user", "assistant", "user"]);
    assert.deepEqual(ctx.errors, []);
  });

  it("#stop works while a fast model streams a long answer at full speed", async () => {
    const { page } = ctx;
    await page.emulateNetworkConditions(null);
    await page.click("#new");
    const t0 = performance.now();
    await sendAndStop(page, "Another very long story, please.");
    const s = await state(page);
    assert.deepEqual(s.stopped, ["stopped"]);
    console.log(`# stopped a full-speed answer of ${s.answers[0].length} characters after ` +
                `${((performance.now() - t0) / 1000).toFixed(1)} s`);
    assert.deepEqual(ctx.errors, []);
  });
});
